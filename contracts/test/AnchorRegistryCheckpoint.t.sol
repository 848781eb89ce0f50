// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

// Solidity tests of the transparency log's checkpoints (anchorWithCheckpoint, checkpoint,
// verifyLogConsistency), run with the others by `npm run test:contracts`. The consistency proofs are
// real: RFC 9162 §2.1.4.1 (SUBPROOF) over a log whose leaf i is the record hash keccak256("leaf", i),
// built below, independently of the contract's verifier (§2.1.4.2).

import {AnchorRegistry} from "../AnchorRegistry.sol";
import {Vm} from "./AnchorRegistry.t.sol";
import {IAccessControl} from "@openzeppelin/contracts/access/IAccessControl.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {console} from "hardhat/console.sol";

/// RFC 9162 trees and consistency proofs over the test log, by the RFC's recursive definitions.
abstract contract LogTrees {
    function record(uint256 i) internal pure returns (bytes32) {
        return keccak256(abi.encode("leaf", i));
    }

    function node(bytes32 l, bytes32 r) internal pure returns (bytes32) {
        return sha256(abi.encodePacked(bytes1(0x01), l, r));
    }

    /// The largest power of two < n (n >= 2).
    function split(uint256 n) internal pure returns (uint256 k) {
        k = 1;
        while (k * 2 < n) k *= 2;
    }

    /// MTH(D[lo:hi]) of the test log.
    function mth(uint256 lo, uint256 hi) internal pure returns (bytes32) {
        if (hi - lo == 1) return sha256(abi.encodePacked(bytes1(0x00), record(lo)));
        uint256 k = split(hi - lo);
        return node(mth(lo, lo + k), mth(lo + k, hi));
    }

    function append(bytes32[] memory a, bytes32 x) internal pure returns (bytes32[] memory out) {
        out = new bytes32[](a.length + 1);
        for (uint256 i = 0; i < a.length; i++) out[i] = a[i];
        out[a.length] = x;
    }

    /// SUBPROOF(m, D[lo:hi], b), RFC 9162 §2.1.4.1.
    function subproof(uint256 m, uint256 lo, uint256 hi, bool b) internal pure returns (bytes32[] memory) {
        uint256 n = hi - lo;
        if (m == n) return b ? new bytes32[](0) : append(new bytes32[](0), mth(lo, hi));
        uint256 k = split(n);
        if (m <= k) return append(subproof(m, lo, lo + k, b), mth(lo + k, hi));
        return append(subproof(m - k, lo + k, hi, false), mth(lo, lo + k));
    }

    /// The number of hashes in PROOF(m, D[n]): SUBPROOF's recursion without the hashing.
    function proofLength(uint256 m, uint256 n, bool b) internal pure returns (uint256) {
        if (m == n) return b ? 0 : 1;
        uint256 k = split(n);
        return 1 + (m <= k ? proofLength(m, k, b) : proofLength(m - k, n - k, false));
    }

    /// PROOF(m, D[n]) for 0 < m <= n.
    function consistencyProof(uint256 m, uint256 n) internal pure returns (bytes32[] memory) {
        return subproof(m, 0, n, true);
    }
}

contract AnchorRegistryCheckpointTest is LogTrees {
    Vm internal constant vm = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    event Anchored(uint64 indexed batchId, bytes32 indexed root, address indexed submitter, uint32 leafCount);
    event LogRootAnchored(uint64 indexed batchId, bytes32 indexed logRoot);
    event Checkpoint(uint64 indexed batchId, uint64 size, bytes32 root);

    AnchorRegistry internal registry;
    address internal constant STRANGER = address(0xBEEF);

    function setUp() public {
        registry = new AnchorRegistry();
    }

    function batchRoot(uint256 m, uint256 n) internal pure returns (bytes32) {
        return keccak256(abi.encode("batch", m, n));
    }

    /// Appends the test log's leaves [m, n) as one batch with a real proof.
    function grow(uint256 m, uint256 n) internal returns (uint64) {
        bytes32[] memory proof = m == 0 ? new bytes32[](0) : consistencyProof(m, n);
        return registry.anchorWithCheckpoint(batchRoot(m, n), uint32(n - m), mth(m, n), uint64(m), mth(0, n), proof);
    }

    /// The arguments are evaluated before the cheatcode: `sha256` is a call (to the precompile), which
    /// `expectRevert` would take for the call under test.
    function expectRefused(
        bytes memory err,
        bytes32 root,
        uint32 leafCount,
        bytes32 logRoot,
        uint64 oldSize,
        bytes32 newLogRoot,
        bytes32[] memory proof
    ) internal {
        vm.expectRevert(err);
        registry.anchorWithCheckpoint(root, leafCount, logRoot, oldSize, newLogRoot, proof);
    }

    /// {grow} sent by `from`; with `err`, expected to revert with it.
    function growFrom(address from, uint256 m, uint256 n, bytes memory err) internal {
        bytes32[] memory proof = consistencyProof(m, n);
        (bytes32 logRoot, bytes32 newLogRoot) = (mth(m, n), mth(0, n));
        if (err.length > 0) vm.expectRevert(err);
        vm.prank(from);
        registry.anchorWithCheckpoint(batchRoot(m, n), uint32(n - m), logRoot, uint64(m), newLogRoot, proof);
    }

    function requireCheckpoint(uint256 size, bytes32 root) internal view {
        (uint64 s, bytes32 r) = registry.checkpoint();
        require(s == size, "stored size");
        require(r == root, "stored root");
    }

    // --- the verifier ----------------------------------------------------------------------

    function requireConsistent(uint256 m, uint256 n) internal view {
        bytes32[] memory p = consistencyProof(m, n);
        bytes32 oldRoot = mth(0, m);
        bytes32 newRoot = mth(0, n);
        require(registry.verifyLogConsistency(m, n, oldRoot, newRoot, p), "real proof refused");
        for (uint256 j = 0; j < p.length; j++) {
            p[j] ^= bytes32(uint256(1) << (j % 256));
            require(!registry.verifyLogConsistency(m, n, oldRoot, newRoot, p), "flipped proof hash accepted");
            p[j] ^= bytes32(uint256(1) << (j % 256));
        }
        require(!registry.verifyLogConsistency(m, n, newRoot, newRoot, p) || m == n, "wrong old root accepted");
        require(!registry.verifyLogConsistency(m, n, oldRoot, oldRoot, p) || m == n, "wrong new root accepted");
        require(!registry.verifyLogConsistency(m, n, oldRoot, newRoot, append(p, newRoot)), "longer proof accepted");
        if (p.length > 0) {
            bytes32[] memory shorter = new bytes32[](p.length - 1);
            for (uint256 j = 0; j < shorter.length; j++) shorter[j] = p[j];
            require(!registry.verifyLogConsistency(m, n, oldRoot, newRoot, shorter), "shorter proof accepted");
        }
        require(!registry.verifyLogConsistency(n + 1, n, oldRoot, newRoot, p), "shrinking sizes accepted");
        // Another new size whose proof has another length. (Sizes of the same shape pass: RFC 9162 binds
        // the size only through the root, which no tree of that other size has.)
        uint256[3] memory others = [n + 1, 2 * n, n - 1];
        for (uint256 i = 0; i < others.length; i++) {
            if (others[i] < m || proofLength(m, others[i], true) == p.length) continue;
            require(!registry.verifyLogConsistency(m, others[i], oldRoot, newRoot, p), "size of another shape accepted");
        }
    }

    function test_ConsistencyEveryPairUpTo17() public view {
        for (uint256 n = 1; n <= 17; n++) {
            for (uint256 m = 1; m <= n; m++) requireConsistent(m, n);
        }
    }

    function test_ConsistencyPowersOfTwoAndNeighbours() public view {
        uint256[10] memory ms = [uint256(1), 2, 4, 8, 32, 63, 64, 65, 100, 127];
        for (uint256 i = 0; i < ms.length; i++) {
            requireConsistent(ms[i], ms[i] + 1); // m == n - 1
            requireConsistent(ms[i], 128);
            requireConsistent(ms[i], 2 * ms[i]);
        }
    }

    function testFuzz_Consistency(uint8 a, uint8 b) public view {
        uint256 m = uint256(a) % 150 + 1;
        uint256 n = m + uint256(b) % 150;
        requireConsistent(m, n);
    }

    function test_ConsistencyFromAndToTheEmptyTree() public view {
        bytes32 r = mth(0, 3);
        require(registry.verifyLogConsistency(0, 3, bytes32(0), r, new bytes32[](0)), "from empty");
        require(!registry.verifyLogConsistency(0, 3, bytes32(0), r, append(new bytes32[](0), r)), "from empty, proof");
        require(!registry.verifyLogConsistency(3, 0, r, bytes32(0), new bytes32[](0)), "to empty");
        require(!registry.verifyLogConsistency(3, 3, r, mth(0, 2), new bytes32[](0)), "same size, other root");
    }

    // --- a chain of checkpoints ---------------------------------------------------------------

    function test_ChainOfCheckpoints() public {
        requireCheckpoint(0, bytes32(0));
        uint256[17] memory sizes = [uint256(0), 1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 32, 33, 50, 64, 65];
        for (uint256 i = 1; i < sizes.length; i++) {
            (uint256 m, uint256 n) = (sizes[i - 1], sizes[i]);
            uint64 id = uint64(i);
            vm.expectEmit(true, true, true, true);
            emit Anchored(id, batchRoot(m, n), address(this), uint32(n - m));
            vm.expectEmit(true, true, true, true);
            emit LogRootAnchored(id, mth(m, n));
            vm.expectEmit(true, true, true, true);
            emit Checkpoint(id, uint64(n), mth(0, n));
            require(grow(m, n) == id, "batch id");
            requireCheckpoint(n, mth(0, n));
            (uint64 batchId,,, uint32 leafCount) = registry.getAnchor(batchRoot(m, n));
            require(batchId == id && leafCount == n - m, "stored like anchor()");
        }
    }

    function test_AnchorAndAnchorWithLogRootLeaveTheCheckpointAlone() public {
        grow(0, 3);
        require(registry.anchor(keccak256("plain"), 7) == 2, "anchor batch id");
        require(registry.anchorWithLogRoot(keccak256("logged"), 9, keccak256("lr")) == 3, "anchorWithLogRoot id");
        requireCheckpoint(3, mth(0, 3));
        require(grow(3, 6) == 4, "the log continues from 3");
        requireCheckpoint(6, mth(0, 6));
        require(registry.batchCount() == 4, "batchCount");
    }

    // --- refusals -----------------------------------------------------------------------------

    function test_ForgedProofRefused() public {
        grow(0, 5);
        bytes32[] memory p = consistencyProof(5, 12);
        for (uint256 j = 0; j < p.length; j++) {
            p[j] ^= bytes32(uint256(1) << 7);
            expectRefused(abi.encodeWithSelector(AnchorRegistry.InconsistentCheckpoint.selector), batchRoot(5, 12), 7, mth(5, 12), 5, mth(0, 12), p);
            p[j] ^= bytes32(uint256(1) << 7);
        }
        // A root that is not the log's: a proof from (5, stored root) to it cannot exist.
        expectRefused(abi.encodeWithSelector(AnchorRegistry.InconsistentCheckpoint.selector), batchRoot(5, 12), 7, mth(5, 12), 5, mth(1, 13), p);
        // The real proof with a leaf count whose proof has another shape (size 8: 4 elements, not 5).
        // RFC 9162 binds sizes only through the roots: leaf count 8 (size 13) has the same shape as 12
        // here, and the check passes; the stored root would then be no tree of 13 real leaves.
        expectRefused(abi.encodeWithSelector(AnchorRegistry.InconsistentCheckpoint.selector), batchRoot(5, 12), 3, mth(5, 12), 5, mth(0, 12), p);
        expectRefused(abi.encodeWithSelector(AnchorRegistry.InconsistentCheckpoint.selector), batchRoot(5, 12), 7, mth(5, 12), 5, mth(0, 12), new bytes32[](0));
        requireCheckpoint(5, mth(0, 5));
        require(registry.batchCount() == 1, "a refused checkpoint anchored its batch");
        grow(5, 12);
        requireCheckpoint(12, mth(0, 12));
    }

    function test_StaleShrinkingAndReplayedCheckpointsRefused() public {
        grow(0, 4);
        grow(4, 10);
        // Replayed: the same checkpoint again (another batch root, or the same one).
        bytes32[] memory p = consistencyProof(4, 10);
        expectRefused(abi.encodeWithSelector(AnchorRegistry.CheckpointMismatch.selector, uint64(10)), keccak256("replay"), 6, mth(4, 10), 4, mth(0, 10), p);
        expectRefused(abi.encodeWithSelector(AnchorRegistry.RootAlreadyAnchored.selector, batchRoot(4, 10), uint64(2)), batchRoot(4, 10), 6, mth(4, 10), 4, mth(0, 10), p);
        // Shrinking: a checkpoint of 6 built on size 2, below the stored 10.
        expectRefused(abi.encodeWithSelector(AnchorRegistry.CheckpointMismatch.selector, uint64(10)), keccak256("shrink"), 4, mth(2, 6), 2, mth(0, 6), consistencyProof(2, 6));
        // Restarting the log at 0.
        expectRefused(abi.encodeWithSelector(AnchorRegistry.CheckpointMismatch.selector, uint64(10)), keccak256("restart"), 3, mth(0, 3), 0, mth(0, 3), new bytes32[](0));
        // Ahead of the stored size (a batch slipped in between).
        expectRefused(abi.encodeWithSelector(AnchorRegistry.CheckpointMismatch.selector, uint64(10)), keccak256("ahead"), 2, mth(11, 13), 11, mth(0, 13), consistencyProof(11, 13));
        requireCheckpoint(10, mth(0, 10));
        require(registry.batchCount() == 2, "a refused checkpoint anchored its batch");
    }

    function test_FirstCheckpointRules() public {
        // Before any checkpoint the stored size is 0.
        expectRefused(abi.encodeWithSelector(AnchorRegistry.CheckpointMismatch.selector, uint64(0)), batchRoot(3, 5), 2, mth(3, 5), 3, mth(0, 5), consistencyProof(3, 5));
        // oldSize 0: no proof, and the log's root is the batch's own.
        expectRefused(abi.encodeWithSelector(AnchorRegistry.InconsistentCheckpoint.selector), batchRoot(0, 3), 3, mth(0, 3), 0, mth(0, 3), append(new bytes32[](0), mth(0, 3)));
        expectRefused(abi.encodeWithSelector(AnchorRegistry.InconsistentCheckpoint.selector), batchRoot(0, 3), 3, mth(0, 3), 0, mth(0, 4), new bytes32[](0));
        requireCheckpoint(0, bytes32(0));
        grow(0, 3);
        requireCheckpoint(3, mth(0, 3));
    }

    function test_AnchorChecksStillApply() public {
        bytes32 role = registry.ANCHORER_ROLE();
        bytes32 root3 = mth(0, 3);
        vm.expectRevert(abi.encodeWithSelector(IAccessControl.AccessControlUnauthorizedAccount.selector, STRANGER, role));
        vm.prank(STRANGER);
        registry.anchorWithCheckpoint(batchRoot(0, 3), 3, root3, 0, root3, new bytes32[](0));
        expectRefused(abi.encodeWithSelector(AnchorRegistry.ZeroLeafCount.selector), batchRoot(0, 3), 0, mth(0, 3), 0, mth(0, 3), new bytes32[](0));
        expectRefused(abi.encodeWithSelector(AnchorRegistry.ZeroRoot.selector), batchRoot(0, 3), 3, bytes32(0), 0, bytes32(0), new bytes32[](0));
        expectRefused(abi.encodeWithSelector(AnchorRegistry.ZeroRoot.selector), bytes32(0), 3, mth(0, 3), 0, mth(0, 3), new bytes32[](0));
        requireCheckpoint(0, bytes32(0));

        // A granted anchorer continues the same log; revoking the cached anchorer keeps it.
        address second = address(0xA11CE);
        registry.grantRole(role, second);
        grow(0, 2);
        growFrom(second, 2, 5, "");
        registry.revokeRole(role, second);
        requireCheckpoint(5, mth(0, 5));
        require(registry.batchCount() == 2, "revocation changed batchCount");
        growFrom(second, 5, 6, abi.encodeWithSelector(IAccessControl.AccessControlUnauthorizedAccount.selector, second, role));
        grow(5, 6);
        requireCheckpoint(6, mth(0, 6));
    }

    function test_SizeCannotWrap() public {
        // Reaching 2^56 leaves takes 2^24 batches of 2^32 - 1 leaves: set the size directly instead
        // (`_head` is slot 1, after AccessControl's `_roles`; the size is bits 200..255).
        uint256 head = uint256(vm.load(address(registry), bytes32(uint256(1))));
        uint256 nearFull = type(uint56).max - 5;
        vm.store(address(registry), bytes32(uint256(1)), bytes32(head | (nearFull << 200)));
        (uint64 size,) = registry.checkpoint();
        require(size == nearFull, "slot layout");
        expectRefused(abi.encodeWithSelector(SafeCast.SafeCastOverflowedUintDowncast.selector, uint8(56), nearFull + 6), keccak256("full"), 6, keccak256("l"), uint64(nearFull), keccak256("n"), new bytes32[](1));
    }
}
