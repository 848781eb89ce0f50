// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";

/// @title AnchorRegistry
/// @notice Anchors Merkle roots of anchord record batches.
///
/// Each batch root is stored once, in a single packed storage slot, together with the
/// contract's own sequential batch id (starting at 1), the block number and timestamp of the
/// anchoring transaction and the number of leaves. The leaves are record hashes
/// (`sha256(JCS(data))`) encoded as OpenZeppelin `StandardMerkleTree` leaves of type
/// `["bytes32"]`: `leaf = keccak256(bytes.concat(keccak256(abi.encode(recordHash))))`,
/// internal nodes are `keccak256` of the sorted pair.
///
/// An auditor answers "is this record hash in an anchored batch, and which one" with one
/// `eth_call` to {verify} or {verifyAnchored}.
///
/// {anchorWithLogRoot} also commits, in the same transaction, the root of the batch's second tree:
/// the RFC 9162 (Certificate Transparency) tree over the same record hashes, which COSE Receipts
/// (RFC 9942, `vds` = RFC9162_SHA256) prove against. It is logged ({LogRootAnchored}), not stored:
/// the batch's storage slot already says the batch is anchored, and a log costs ~1,900 gas where a
/// second slot would cost ~22,100. {verifyLogInclusion} checks an RFC 9162 inclusion proof with the
/// SHA-256 precompile.
///
/// Unknown roots are not an error for the views: {getAnchor} returns all zeros (batch ids start
/// at 1, so `batchId == 0` means "not anchored here"), {verify} returns false.
contract AnchorRegistry is AccessControl {
    /// @notice Accounts allowed to call {anchor}.
    bytes32 public constant ANCHORER_ROLE = keccak256("ANCHORER_ROLE");

    /// @notice A batch root was anchored.
    event Anchored(uint64 indexed batchId, bytes32 indexed root, address indexed submitter, uint32 leafCount);

    /// @notice The RFC 9162 tree root of batch `batchId`, emitted right after its {Anchored}.
    event LogRootAnchored(uint64 indexed batchId, bytes32 indexed logRoot);

    /// @notice `root` was already anchored as batch `batchId`.
    error RootAlreadyAnchored(bytes32 root, uint64 batchId);
    /// @notice The zero root cannot be anchored.
    error ZeroRoot();
    /// @notice A batch has at least one leaf.
    error ZeroLeafCount();

    /// @dev Global state in ONE slot, read and written once per {anchor}: packed
    /// { batchCount: bits 0..63, cachedAnchorer: bits 64..223 } - the last batch id and the last
    /// account whose ANCHORER_ROLE was checked by {anchor}.
    /// Invariant: `cachedAnchorer == address(0) || hasRole(ANCHORER_ROLE, cachedAnchorer)`; it is
    /// kept by {_revokeRole}. This saves the cold role lookup (~2,300 gas) on every anchor by the
    /// usual (single) node account.
    uint256 private _head;

    /// @dev root => packed { batchId: bits 0..63, blockNumber: 64..127, timestamp: 128..191,
    /// leafCount: 192..223 }. Zero means "not anchored" (batchId is never 0).
    mapping(bytes32 root => uint256 packed) private _anchors;

    /// @notice The deployer becomes admin (DEFAULT_ADMIN_ROLE) and anchorer.
    constructor() {
        _grantRole(DEFAULT_ADMIN_ROLE, msg.sender);
        _grantRole(ANCHORER_ROLE, msg.sender);
        // Makes the slot non-zero from the start, so the first anchor does not pay for a fresh
        // slot (20,000 gas) on top of the root's own slot.
        _head = uint256(uint160(msg.sender)) << 64;
    }

    /// @notice Anchors a batch root. Returns the new batch id (1, 2, 3, ...).
    /// @param root the `StandardMerkleTree` root of the batch.
    /// @param leafCount the number of record hashes (leaves) in the batch, > 0.
    function anchor(bytes32 root, uint32 leafCount) external returns (uint64 batchId) {
        return _anchor(root, leafCount);
    }

    /// @notice {anchor}, and commits the batch's RFC 9162 tree root in the same transaction
    /// ({LogRootAnchored}). Reverts with {ZeroRoot} for a zero `logRoot`.
    /// @param logRoot the RFC 9162 root (SHA-256, leaves = the record hashes) of the same batch.
    function anchorWithLogRoot(bytes32 root, uint32 leafCount, bytes32 logRoot) external returns (uint64 batchId) {
        if (logRoot == bytes32(0)) revert ZeroRoot();
        batchId = _anchor(root, leafCount);
        emit LogRootAnchored(batchId, logRoot);
    }

    function _anchor(bytes32 root, uint32 leafCount) private returns (uint64 batchId) {
        if (root == bytes32(0)) revert ZeroRoot();
        if (leafCount == 0) revert ZeroLeafCount();

        uint256 head = _head;
        if (address(uint160(head >> 64)) != msg.sender) {
            _checkRole(ANCHORER_ROLE);
        }

        uint256 existing = _anchors[root];
        if (existing != 0) revert RootAlreadyAnchored(root, uint64(existing));

        // 2^64 anchors cannot happen.
        unchecked {
            batchId = uint64(head) + 1;
        }
        _head = uint256(batchId) | (uint256(uint160(msg.sender)) << 64);
        _anchors[root] = uint256(batchId) | (uint256(uint64(block.number)) << 64)
            | (uint256(uint64(block.timestamp)) << 128) | (uint256(leafCount) << 192);

        emit Anchored(batchId, root, msg.sender, leafCount);
    }

    /// @notice Looks a root up. All zeros when the root was never anchored here.
    function getAnchor(bytes32 root)
        public
        view
        returns (uint64 batchId, uint64 blockNumber, uint64 timestamp, uint32 leafCount)
    {
        uint256 packed = _anchors[root];
        batchId = uint64(packed);
        blockNumber = uint64(packed >> 64);
        timestamp = uint64(packed >> 128);
        leafCount = uint32(packed >> 192);
    }

    /// @notice The number of batches anchored so far (= the last batch id).
    function batchCount() external view returns (uint64) {
        return uint64(_head);
    }

    /// @notice The `StandardMerkleTree` `["bytes32"]` leaf of a record hash.
    function leafHash(bytes32 recordHash) public pure returns (bytes32) {
        return keccak256(bytes.concat(keccak256(abi.encode(recordHash))));
    }

    /// @notice Merkle inclusion only: true when `proof` links `recordHash` to `root`.
    /// Does NOT say that `root` is anchored; see {verify}.
    function verifyProof(bytes32 recordHash, bytes32[] calldata proof, bytes32 root) public pure returns (bool) {
        return MerkleProof.verifyCalldata(proof, root, leafHash(recordHash));
    }

    /// @notice True when `root` is anchored in this contract AND `proof` links `recordHash` to it.
    function verify(bytes32 recordHash, bytes32[] calldata proof, bytes32 root) external view returns (bool) {
        return _anchors[root] != 0 && verifyProof(recordHash, proof, root);
    }

    /// @notice Like {verify}, and also returns where the root was anchored. When `included` is
    /// false every other value is zero.
    function verifyAnchored(bytes32 recordHash, bytes32[] calldata proof, bytes32 root)
        external
        view
        returns (bool included, uint64 batchId, uint64 blockNumber, uint64 timestamp, uint32 leafCount)
    {
        if (_anchors[root] == 0 || !verifyProof(recordHash, proof, root)) {
            return (false, 0, 0, 0, 0);
        }
        (batchId, blockNumber, timestamp, leafCount) = getAnchor(root);
        included = true;
    }

    /// @notice The RFC 9162 leaf hash of a record hash: SHA-256(0x00 || recordHash).
    function logLeafHash(bytes32 recordHash) public pure returns (bytes32) {
        return sha256(abi.encodePacked(bytes1(0x00), recordHash));
    }

    /// @notice RFC 9162 inclusion only (§2.1.3.2): true when `proof` (sibling hashes from the leaf
    /// up) links `recordHash` at `leafIndex` in a tree of `treeSize` leaves to `logRoot`. Does NOT
    /// say that `logRoot` is anchored: that is the {LogRootAnchored} log of this contract.
    function verifyLogInclusion(
        bytes32 recordHash,
        uint256 leafIndex,
        uint256 treeSize,
        bytes32[] calldata proof,
        bytes32 logRoot
    ) external pure returns (bool) {
        if (leafIndex >= treeSize) return false;
        uint256 fn = leafIndex;
        uint256 sn = treeSize - 1;
        bytes32 r = logLeafHash(recordHash);
        for (uint256 i = 0; i < proof.length; ++i) {
            if (sn == 0) return false;
            if (fn & 1 == 1 || fn == sn) {
                r = sha256(abi.encodePacked(bytes1(0x01), proof[i], r));
                while (fn & 1 == 0 && fn != 0) {
                    fn >>= 1;
                    sn >>= 1;
                }
            } else {
                r = sha256(abi.encodePacked(bytes1(0x01), r, proof[i]));
            }
            fn >>= 1;
            sn >>= 1;
        }
        return sn == 0 && r == logRoot;
    }

    /// @dev Keeps the `_head` cache invariant: a revoked anchorer loses the fast path too.
    function _revokeRole(bytes32 role, address account) internal override returns (bool revoked) {
        revoked = super._revokeRole(role, account);
        if (role == ANCHORER_ROLE) {
            uint256 head = _head;
            if (address(uint160(head >> 64)) == account) _head = uint256(uint64(head));
        }
    }
}
