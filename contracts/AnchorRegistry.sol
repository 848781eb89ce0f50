// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";
import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";

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
/// {anchorWithCheckpoint} makes the chain the witness of anchord's append-only transparency log (one log
/// per deployment: the record hashes of the checkpointed batches, in the order the chain executes them).
/// Each such batch carries the log's checkpoint including it: the contract stores the latest (size,
/// root) and accepts a new one only with an RFC 9162 consistency proof from the stored one, for
/// exactly `leafCount` more leaves. So the log can only grow by whole batches, and no history can be
/// rewritten once anchored here: a forged proof, a shrinking size and a replayed checkpoint revert.
///
/// Unknown roots are not an error for the views: {getAnchor} returns all zeros (batch ids start
/// at 1, so `batchId == 0` means "not anchored here"), {verify} returns false.
contract AnchorRegistry is AccessControl {
    /// @notice Accounts allowed to call {anchor}.
    bytes32 public constant ANCHORER_ROLE = keccak256("ANCHORER_ROLE");

    /// @notice A batch root was anchored.
    /// @param batchId the contract's id of the batch (1, 2, 3, ...).
    /// @param root the batch's `StandardMerkleTree` root.
    /// @param submitter the anchorer that sent it.
    /// @param leafCount the number of record hashes in the batch.
    event Anchored(uint64 indexed batchId, bytes32 indexed root, address indexed submitter, uint32 leafCount);

    /// @notice The RFC 9162 tree root of batch `batchId`, emitted right after its {Anchored}.
    /// @param batchId the batch, as in its {Anchored}.
    /// @param logRoot the RFC 9162 root of the batch's record hashes, which COSE Receipts prove against.
    event LogRootAnchored(uint64 indexed batchId, bytes32 indexed logRoot);

    /// @notice The transparency log's checkpoint including batch `batchId`: `size` leaves with RFC 9162
    /// root `root`. Emitted by {anchorWithCheckpoint} after {Anchored} and {LogRootAnchored}.
    /// @param batchId the batch whose leaves are the log's last ones at this size.
    /// @param size the log's size (leaves) with the batch.
    /// @param root the RFC 9162 root of the log's first `size` leaves.
    event Checkpoint(uint64 indexed batchId, uint64 size, bytes32 root);

    /// @notice `root` was already anchored as batch `batchId`.
    error RootAlreadyAnchored(bytes32 root, uint64 batchId);
    /// @notice The zero root cannot be anchored.
    error ZeroRoot();
    /// @notice A batch has at least one leaf.
    error ZeroLeafCount();
    /// @notice {anchorWithCheckpoint}'s `oldSize` is not the log size stored here, `storedSize`: the
    /// checkpoint was built on another tip (a replayed, reordered or stale transaction).
    error CheckpointMismatch(uint64 storedSize);
    /// @notice {anchorWithCheckpoint}'s consistency proof does not link the stored checkpoint to the new
    /// one (or, for the first checkpoint, the proof is not empty or the new root is not the batch's).
    error InconsistentCheckpoint();

    /// @dev Number of bits of `_head` per field. The batch counter and the log size share the slot with
    /// the cached anchorer, so the checkpoint's size costs no storage access of its own.
    uint256 private constant _COUNT_BITS = 40;
    uint256 private constant _SIZE_SHIFT = 200;
    uint256 private constant _COUNT_MASK = (1 << _COUNT_BITS) - 1;
    uint256 private constant _ANCHORER_MASK = uint256(type(uint160).max) << _COUNT_BITS;

    /// @dev Global state in ONE slot, read and written once per anchor: packed
    /// { batchCount: bits 0..39, cachedAnchorer: bits 40..199, logSize: bits 200..255 } - the last
    /// batch id, the last account whose ANCHORER_ROLE was checked by {_anchor}, and the size of the
    /// transparency log's stored checkpoint.
    /// Invariant: `cachedAnchorer == address(0) || hasRole(ANCHORER_ROLE, cachedAnchorer)`; it is
    /// kept by {_revokeRole}. This saves the cold role lookup (~2,300 gas) on every anchor by the
    /// usual (single) node account.
    /// Widths: 2^40 batches (each a transaction of >= 21,000 gas) cannot be sent; 2^56 leaves is
    /// 7.2e16 records (2,283 years at a million records a second), and {anchorWithCheckpoint} reverts
    /// (SafeCast) rather than wrap. Keeping the size here instead of in a slot of its own saves a cold
    /// read and a rewrite: measured on anvil, a size slot of its own cost 5,100-5,170 gas more per
    /// checkpoint and 22,200 more for the first (docs/contract.md).
    uint256 private _head;

    /// @dev The RFC 9162 root of the stored checkpoint (size in `_head`). 32 bytes of hash leave no
    /// room for anything else: its own slot, rewritten by each checkpoint (~5,000 gas).
    bytes32 private _logRoot;

    /// @dev root => packed { batchId: bits 0..63, blockNumber: 64..127, timestamp: 128..191,
    /// leafCount: 192..223 }. Zero means "not anchored" (batchId is never 0).
    mapping(bytes32 root => uint256 packed) private _anchors;

    /// @notice The deployer becomes admin (DEFAULT_ADMIN_ROLE) and anchorer.
    constructor() {
        _grantRole(DEFAULT_ADMIN_ROLE, msg.sender);
        _grantRole(ANCHORER_ROLE, msg.sender);
        // Makes the slot non-zero from the start, so the first anchor does not pay for a fresh
        // slot (20,000 gas) on top of the root's own slot.
        _head = uint256(uint160(msg.sender)) << _COUNT_BITS;
    }

    /// @notice Anchors a batch root. Returns the new batch id (1, 2, 3, ...).
    /// @param root the `StandardMerkleTree` root of the batch.
    /// @param leafCount the number of record hashes (leaves) in the batch, > 0.
    /// @return batchId the new batch's id.
    function anchor(bytes32 root, uint32 leafCount) external returns (uint64 batchId) {
        return _anchor(root, leafCount, false, 0);
    }

    /// @notice {anchor}, and commits the batch's RFC 9162 tree root in the same transaction
    /// ({LogRootAnchored}). Reverts with {ZeroRoot} for a zero `logRoot`.
    /// @param root the `StandardMerkleTree` root of the batch.
    /// @param leafCount the number of record hashes (leaves) in the batch, > 0.
    /// @param logRoot the RFC 9162 root (SHA-256, leaves = the record hashes) of the same batch.
    /// @return batchId the new batch's id.
    function anchorWithLogRoot(bytes32 root, uint32 leafCount, bytes32 logRoot) external returns (uint64 batchId) {
        if (logRoot == bytes32(0)) revert ZeroRoot();
        batchId = _anchor(root, leafCount, false, 0);
        emit LogRootAnchored(batchId, logRoot);
    }

    /// @notice {anchorWithLogRoot}, and appends the batch to the transparency log: the log grows from
    /// the stored checkpoint (`oldSize` leaves) by the batch's `leafCount` leaves, to the checkpoint
    /// (`oldSize + leafCount`, `newLogRoot`), which is stored and emitted ({Checkpoint}).
    ///
    /// Reverts, besides {anchorWithLogRoot}'s errors, with {CheckpointMismatch} when `oldSize` is not
    /// the stored size, and with {InconsistentCheckpoint} when `consistency` is not the RFC 9162
    /// consistency proof from the stored checkpoint to the new one. The first checkpoint (`oldSize ==
    /// 0`) has an empty proof and `newLogRoot == logRoot`: the log starts with this batch's own tree.
    /// @param root the `StandardMerkleTree` root of the batch.
    /// @param leafCount the number of record hashes (leaves) in the batch, > 0: the leaves the log grows by.
    /// @param logRoot the RFC 9162 root of the batch's own tree (as in {anchorWithLogRoot}).
    /// @param oldSize the stored log size this checkpoint extends (see {checkpoint}).
    /// @param newLogRoot the RFC 9162 root of the log's first `oldSize + leafCount` leaves.
    /// @param consistency the RFC 9162 §2.1.4 consistency proof from (`oldSize`, stored root) to
    /// (`oldSize + leafCount`, `newLogRoot`).
    /// @return batchId the new batch's id.
    function anchorWithCheckpoint(
        bytes32 root,
        uint32 leafCount,
        bytes32 logRoot,
        uint64 oldSize,
        bytes32 newLogRoot,
        bytes32[] calldata consistency
    ) external returns (uint64 batchId) {
        if (logRoot == bytes32(0)) revert ZeroRoot();
        batchId = _anchor(root, leafCount, true, oldSize);
        if (oldSize == 0) {
            if (consistency.length != 0 || newLogRoot != logRoot) revert InconsistentCheckpoint();
        } else if (!_verifyConsistency(oldSize, uint256(oldSize) + leafCount, _logRoot, newLogRoot, consistency)) {
            revert InconsistentCheckpoint();
        }
        _logRoot = newLogRoot;
        emit LogRootAnchored(batchId, logRoot);
        unchecked {
            emit Checkpoint(batchId, oldSize + leafCount, newLogRoot);
        }
    }

    /// @notice The transparency log's stored checkpoint: its size (leaves) and RFC 9162 root. `(0, 0)`
    /// before the first {anchorWithCheckpoint}.
    /// @return size the number of leaves of the stored checkpoint.
    /// @return root its RFC 9162 root.
    function checkpoint() external view returns (uint64 size, bytes32 root) {
        return (uint64(_head >> _SIZE_SHIFT), _logRoot);
    }

    /// @dev Checks and stores a batch; with `withCheckpoint`, also checks `oldSize` against the stored
    /// log size and grows it by `leafCount` in the same write of `_head`.
    function _anchor(bytes32 root, uint32 leafCount, bool withCheckpoint, uint64 oldSize)
        private
        returns (uint64 batchId)
    {
        if (root == bytes32(0)) revert ZeroRoot();
        if (leafCount == 0) revert ZeroLeafCount();

        uint256 head = _head;
        if (address(uint160(head >> _COUNT_BITS)) != msg.sender) {
            _checkRole(ANCHORER_ROLE);
        }

        uint256 existing = _anchors[root];
        if (existing != 0) revert RootAlreadyAnchored(root, uint64(existing));

        uint256 size = head >> _SIZE_SHIFT;
        if (withCheckpoint) {
            if (oldSize != size) revert CheckpointMismatch(uint64(size));
            size = SafeCast.toUint56(size + leafCount);
        }
        // 2^40 anchors cannot happen (see `_head`).
        unchecked {
            batchId = uint64(head & _COUNT_MASK) + 1;
        }
        _head = uint256(batchId) | (uint256(uint160(msg.sender)) << _COUNT_BITS) | (size << _SIZE_SHIFT);
        _anchors[root] = uint256(batchId) | (uint256(uint64(block.number)) << 64)
            | (uint256(uint64(block.timestamp)) << 128) | (uint256(leafCount) << 192);

        emit Anchored(batchId, root, msg.sender, leafCount);
    }

    /// @notice Looks a root up. All zeros when the root was never anchored here.
    /// @param root a batch's `StandardMerkleTree` root.
    /// @return batchId the batch's id (0: not anchored here).
    /// @return blockNumber the block of the anchoring transaction.
    /// @return timestamp that block's timestamp (seconds).
    /// @return leafCount the batch's number of record hashes.
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
    /// @return the last batch id, 0 before the first anchor.
    function batchCount() external view returns (uint64) {
        return uint64(_head & _COUNT_MASK);
    }

    /// @notice The `StandardMerkleTree` `["bytes32"]` leaf of a record hash.
    /// @param recordHash a record hash, `sha256(JCS(data))`.
    /// @return the leaf: `keccak256(keccak256(recordHash))`.
    function leafHash(bytes32 recordHash) public pure returns (bytes32) {
        return keccak256(bytes.concat(keccak256(abi.encode(recordHash))));
    }

    /// @notice Merkle inclusion only: true when `proof` links `recordHash` to `root`.
    /// Does NOT say that `root` is anchored; see {verify}.
    /// @param recordHash the record hash.
    /// @param proof the sibling hashes from the leaf up (`StandardMerkleTree.getProof`).
    /// @param root the tree's root.
    /// @return whether the proof holds.
    function verifyProof(bytes32 recordHash, bytes32[] calldata proof, bytes32 root) public pure returns (bool) {
        return MerkleProof.verifyCalldata(proof, root, leafHash(recordHash));
    }

    /// @notice True when `root` is anchored in this contract AND `proof` links `recordHash` to it.
    /// @param recordHash the record hash.
    /// @param proof the sibling hashes from the leaf up.
    /// @param root the batch root the proof leads to.
    /// @return whether the record is in a batch anchored here.
    function verify(bytes32 recordHash, bytes32[] calldata proof, bytes32 root) external view returns (bool) {
        return _anchors[root] != 0 && verifyProof(recordHash, proof, root);
    }

    /// @notice Like {verify}, and also returns where the root was anchored. When `included` is
    /// false every other value is zero.
    /// @param recordHash the record hash.
    /// @param proof the sibling hashes from the leaf up.
    /// @param root the batch root the proof leads to.
    /// @return included whether the record is in a batch anchored here.
    /// @return batchId the batch's id.
    /// @return blockNumber the block of the anchoring transaction.
    /// @return timestamp that block's timestamp (seconds).
    /// @return leafCount the batch's number of record hashes.
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
    /// @param recordHash the record hash.
    /// @return the leaf hash.
    function logLeafHash(bytes32 recordHash) public pure returns (bytes32) {
        return sha256(abi.encodePacked(bytes1(0x00), recordHash));
    }

    /// @notice RFC 9162 inclusion only (§2.1.3.2): true when `proof` (sibling hashes from the leaf
    /// up) links `recordHash` at `leafIndex` in a tree of `treeSize` leaves to `logRoot`. Does NOT
    /// say that `logRoot` is anchored: that is the {LogRootAnchored} log of this contract.
    /// @param recordHash the record hash.
    /// @param leafIndex its leaf's index in the tree.
    /// @param treeSize the tree's number of leaves.
    /// @param proof the RFC 9162 inclusion proof.
    /// @param logRoot the tree's root.
    /// @return whether the proof holds.
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

    /// @notice RFC 9162 consistency only (§2.1.4.2): true when `proof` shows that the tree of `oldSize`
    /// leaves with root `oldRoot` is a prefix of the tree of `newSize` leaves with root `newRoot`. An
    /// empty tree is a prefix of any tree (empty proof); equal sizes need equal roots and an empty proof.
    /// Does NOT say that either root is anchored: that is {checkpoint} and the {Checkpoint} log. `view`
    /// only because of how it calls the SHA-256 precompile; it reads no state.
    /// @param oldSize the older tree's number of leaves.
    /// @param newSize the newer tree's number of leaves.
    /// @param oldRoot the older tree's root.
    /// @param newRoot the newer tree's root.
    /// @param proof the RFC 9162 consistency proof.
    /// @return whether the older tree is a prefix of the newer.
    function verifyLogConsistency(
        uint256 oldSize,
        uint256 newSize,
        bytes32 oldRoot,
        bytes32 newRoot,
        bytes32[] calldata proof
    ) external view returns (bool) {
        if (oldSize > newSize) return false;
        if (oldSize == 0) return proof.length == 0;
        if (oldSize == newSize) return proof.length == 0 && oldRoot == newRoot;
        return _verifyConsistency(oldSize, newSize, oldRoot, newRoot, proof);
    }

    /// @dev RFC 9162 §2.1.4.2 for 0 < m < n, step by step. When m is a power of two the old root is
    /// the proof's implicit first element (the RFC prepends it), so it is read from `oldRoot`.
    function _verifyConsistency(uint256 m, uint256 n, bytes32 oldRoot, bytes32 newRoot, bytes32[] calldata proof)
        private
        view
        returns (bool)
    {
        uint256 len = proof.length;
        if (len == 0) return false;
        uint256 i;
        bytes32 fr;
        if (m & (m - 1) == 0) {
            fr = oldRoot;
        } else {
            fr = proof[0];
            i = 1;
        }
        bytes32 sr = fr;
        uint256 fn = m - 1;
        uint256 sn = n - 1;
        while (fn & 1 == 1) {
            fn >>= 1;
            sn >>= 1;
        }
        for (; i < len; ++i) {
            if (sn == 0) return false;
            bytes32 c = proof[i];
            if (fn & 1 == 1 || fn == sn) {
                fr = _logNode(c, fr);
                sr = _logNode(c, sr);
                while (fn & 1 == 0 && fn != 0) {
                    fn >>= 1;
                    sn >>= 1;
                }
            } else {
                sr = _logNode(sr, c);
            }
            fn >>= 1;
            sn >>= 1;
        }
        return sn == 0 && fr == oldRoot && sr == newRoot;
    }

    /// @dev RFC 9162 interior node: SHA-256(0x01 || left || right), a STATICCALL to the SHA-256 precompile
    /// (0x02) on scratch memory. Measured against `sha256(abi.encodePacked(...))`: ~550 gas less per
    /// proof hash (8,300 per checkpoint at 10^9 leaves); the cost is that the verifier is `view`, not
    /// `pure` (Solidity counts a STATICCALL in assembly as reading state).
    function _logNode(bytes32 left, bytes32 right) private view returns (bytes32 node) {
        assembly ("memory-safe") {
            let p := mload(0x40)
            mstore8(p, 0x01)
            mstore(add(p, 1), left)
            mstore(add(p, 33), right)
            if iszero(staticcall(gas(), 0x02, p, 65, 0x00, 0x20)) { revert(0, 0) }
            node := mload(0x00)
        }
    }

    /// @dev Keeps the `_head` cache invariant: a revoked anchorer loses the fast path too (the
    /// counter and the log size stay).
    function _revokeRole(bytes32 role, address account) internal override returns (bool revoked) {
        revoked = super._revokeRole(role, account);
        if (role == ANCHORER_ROLE) {
            uint256 head = _head;
            if (address(uint160(head >> _COUNT_BITS)) == account) _head = head & ~_ANCHORER_MASK;
        }
    }
}
