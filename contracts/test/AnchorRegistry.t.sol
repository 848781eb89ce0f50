// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

// Solidity tests for AnchorRegistry, run by Hardhat 3's EDR runner:
//   npm run test:contracts      (= hardhat test solidity)
// forge-std is not installed: assertions are plain `require`s and the few cheatcodes we need
// are declared in the `Vm` interface below (same address and signatures as Foundry's).

import {AnchorRegistry} from "../AnchorRegistry.sol";
import {IAccessControl} from "@openzeppelin/contracts/access/IAccessControl.sol";
import {console} from "hardhat/console.sol";

interface Vm {
    function prank(address sender) external;
    function startPrank(address sender) external;
    function stopPrank() external;
    function expectRevert(bytes calldata revertData) external;
    function expectEmit(bool checkTopic1, bool checkTopic2, bool checkTopic3, bool checkData) external;
    function roll(uint256 newHeight) external;
    function warp(uint256 newTimestamp) external;
    function assume(bool condition) external pure;
    function load(address target, bytes32 slot) external view returns (bytes32 data);
    function store(address target, bytes32 slot, bytes32 value) external;
}

contract AnchorRegistryTest {
    Vm internal constant vm = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    event Anchored(uint64 indexed batchId, bytes32 indexed root, address indexed submitter, uint32 leafCount);
    event LogRootAnchored(uint64 indexed batchId, bytes32 indexed logRoot);

    AnchorRegistry internal registry;
    address internal constant STRANGER = address(0xBEEF);
    address internal constant SECOND_ANCHORER = address(0xA11CE);

    // A 5-leaf tree computed with @openzeppelin/merkle-tree:
    //   StandardMerkleTree.of(hashes.map(h => [h]), ["bytes32"])
    // where hashes[i] = sha256(JSON.stringify({ n: "a" | "b" | "c" | "d" | "e" })).
    bytes32 internal constant ROOT = 0xc2159641e0dd2641c2f86601fded0a7a84f5e16b2801950f6f254be472e2f684;
    bytes32 internal constant H0 = 0x68a08d559c924729acadd9d9417814d1da1c2680079385d5deed9dd92a736df9;
    bytes32 internal constant H1 = 0x40ac8b913af06ecd7a193fa54edf85787b46820f37e15f31b984880d6ac3ea7a;
    bytes32 internal constant H4 = 0xf021317ea184124ba53ffa3cae48fdc34085fbde734b8d969818538324ba54e4;
    bytes32 internal constant LEAF0 = 0xb08f6f0adcde1f88a87c8335151e1effb06736a313156bdf2faf2a62c03460bf;

    function proof0() internal pure returns (bytes32[] memory p) {
        p = new bytes32[](2);
        p[0] = 0x8fcc16a221fc49a64a7da76b066a9a3e73745a78f333a860f010a1fa8317a715;
        p[1] = 0x783ea7b9f71efa8727b9456e7dbdfad1721e2037dcd0e385b18677a63143f72b;
    }

    function proof1() internal pure returns (bytes32[] memory p) {
        p = new bytes32[](3);
        p[0] = 0x830e1de06df566ce0de7ef540335b071aba14044f037449c0e072e98d5577118;
        p[1] = 0xf5548f5772d6d542a8e010c55b1fc283bd41a4e48db34b8ce575145225b0e87f;
        p[2] = 0x94cba74869277a49f23af6f7f6d18d54a3f37ed7892e399d30698b1226755349;
    }

    function proof4() internal pure returns (bytes32[] memory p) {
        p = new bytes32[](3);
        p[0] = 0x6401e26c41ff346f964b5c96cbeb1a7cec2d99ad6420fa2478faa83dd9c0938b;
        p[1] = 0xf5548f5772d6d542a8e010c55b1fc283bd41a4e48db34b8ce575145225b0e87f;
        p[2] = 0x94cba74869277a49f23af6f7f6d18d54a3f37ed7892e399d30698b1226755349;
    }

    function setUp() public {
        registry = new AnchorRegistry();
    }

    // --- roles ----------------------------------------------------------------------------

    function test_DeployerIsAdminAndAnchorer() public view {
        require(registry.hasRole(registry.DEFAULT_ADMIN_ROLE(), address(this)), "deployer not admin");
        require(registry.hasRole(registry.ANCHORER_ROLE(), address(this)), "deployer not anchorer");
        require(registry.batchCount() == 0, "batchCount not 0");
    }

    function test_OnlyAnchorerMayAnchor() public {
        bytes32 role = registry.ANCHORER_ROLE();
        vm.expectRevert(
            abi.encodeWithSelector(IAccessControl.AccessControlUnauthorizedAccount.selector, STRANGER, role)
        );
        vm.prank(STRANGER);
        registry.anchor(ROOT, 5);
        require(registry.batchCount() == 0, "stranger anchored");
    }

    function test_GrantedAnchorerMayAnchor() public {
        registry.grantRole(registry.ANCHORER_ROLE(), SECOND_ANCHORER);
        vm.prank(SECOND_ANCHORER);
        require(registry.anchor(ROOT, 5) == 1, "batch id");
        // The deployer (no longer the cached anchorer) still passes the role check.
        require(registry.anchor(bytes32(uint256(2)), 1) == 2, "batch id 2");
    }

    function test_RevokedAnchorerCannotAnchor() public {
        // The deployer is the cached anchorer after its first anchor: revocation must clear it.
        registry.anchor(bytes32(uint256(1)), 1);
        bytes32 role = registry.ANCHORER_ROLE();
        registry.revokeRole(role, address(this));
        vm.expectRevert(
            abi.encodeWithSelector(IAccessControl.AccessControlUnauthorizedAccount.selector, address(this), role)
        );
        registry.anchor(bytes32(uint256(2)), 1);
    }

    function test_RenouncedAnchorerCannotAnchor() public {
        registry.grantRole(registry.ANCHORER_ROLE(), SECOND_ANCHORER);
        vm.startPrank(SECOND_ANCHORER);
        registry.anchor(bytes32(uint256(1)), 1);
        registry.renounceRole(registry.ANCHORER_ROLE(), SECOND_ANCHORER);
        vm.expectRevert(
            abi.encodeWithSelector(
                IAccessControl.AccessControlUnauthorizedAccount.selector, SECOND_ANCHORER, registry.ANCHORER_ROLE()
            )
        );
        registry.anchor(bytes32(uint256(2)), 1);
        vm.stopPrank();
    }

    // --- anchor ---------------------------------------------------------------------------

    function test_AnchorIncrementsBatchIdAndEmits() public {
        vm.expectEmit(true, true, true, true);
        emit Anchored(1, ROOT, address(this), 5);
        require(registry.anchor(ROOT, 5) == 1, "first batch id");

        bytes32 root2 = keccak256("second");
        vm.expectEmit(true, true, true, true);
        emit Anchored(2, root2, address(this), 1000);
        require(registry.anchor(root2, 1000) == 2, "second batch id");

        require(registry.anchor(keccak256("third"), 1) == 3, "third batch id");
        require(registry.batchCount() == 3, "batchCount");
    }

    function test_DuplicateRootRejected() public {
        registry.anchor(ROOT, 5);
        vm.expectRevert(abi.encodeWithSelector(AnchorRegistry.RootAlreadyAnchored.selector, ROOT, uint64(1)));
        registry.anchor(ROOT, 5);
        require(registry.batchCount() == 1, "duplicate counted");
    }

    function test_ZeroRootRejected() public {
        vm.expectRevert(abi.encodeWithSelector(AnchorRegistry.ZeroRoot.selector));
        registry.anchor(bytes32(0), 5);
    }

    function test_ZeroLeafCountRejected() public {
        vm.expectRevert(abi.encodeWithSelector(AnchorRegistry.ZeroLeafCount.selector));
        registry.anchor(ROOT, 0);
    }

    // --- lookup ---------------------------------------------------------------------------

    function test_LookupReturnsBatchBlockTimestamp() public {
        vm.roll(12_345);
        vm.warp(1_700_000_000);
        registry.anchor(keccak256("first"), 1);
        vm.roll(12_346);
        vm.warp(1_700_000_012);
        registry.anchor(ROOT, 5);

        (uint64 batchId, uint64 blockNumber, uint64 timestamp, uint32 leafCount) = registry.getAnchor(ROOT);
        require(batchId == 2, "batchId");
        require(blockNumber == 12_346, "blockNumber");
        require(timestamp == 1_700_000_012, "timestamp");
        require(leafCount == 5, "leafCount");
    }

    function test_LookupUnknownRootIsZero() public view {
        (uint64 batchId, uint64 blockNumber, uint64 timestamp, uint32 leafCount) = registry.getAnchor(ROOT);
        require(batchId == 0 && blockNumber == 0 && timestamp == 0 && leafCount == 0, "not zero");
    }

    // --- verify ---------------------------------------------------------------------------

    function test_LeafHashMatchesStandardMerkleTree() public view {
        require(registry.leafHash(H0) == LEAF0, "leaf encoding differs from OZ StandardMerkleTree");
    }

    function test_VerifyRealProofs() public {
        registry.anchor(ROOT, 5);
        require(registry.verify(H0, proof0(), ROOT), "H0");
        require(registry.verify(H1, proof1(), ROOT), "H1");
        require(registry.verify(H4, proof4(), ROOT), "H4");

        (bool included, uint64 batchId, uint64 blockNumber, uint64 timestamp, uint32 leafCount) =
            registry.verifyAnchored(H1, proof1(), ROOT);
        require(included && batchId == 1 && leafCount == 5, "verifyAnchored");
        require(blockNumber == block.number && timestamp == block.timestamp, "verifyAnchored block");
    }

    function test_VerifyFalseForTamperedLeaf() public {
        registry.anchor(ROOT, 5);
        require(!registry.verify(H1, proof0(), ROOT), "H1 with H0's proof");
        require(!registry.verify(bytes32(uint256(H0) ^ 1), proof0(), ROOT), "flipped bit");
        // The proof is for the double-hashed leaf; passing the leaf itself must fail.
        require(!registry.verify(LEAF0, proof0(), ROOT), "leaf instead of record hash");
    }

    function test_VerifyFalseForTamperedProof() public {
        registry.anchor(ROOT, 5);
        bytes32[] memory p = proof1();
        p[1] = bytes32(uint256(p[1]) ^ (1 << 255));
        require(!registry.verify(H1, p, ROOT), "tampered element");

        bytes32[] memory shorter = new bytes32[](2);
        shorter[0] = proof1()[0];
        shorter[1] = proof1()[1];
        require(!registry.verify(H1, shorter, ROOT), "truncated proof");
        require(!registry.verify(H1, new bytes32[](0), ROOT), "empty proof");
    }

    function test_VerifyFalseForUnanchoredRoot() public {
        // Proof is valid, but the root was never anchored here.
        require(registry.verifyProof(H0, proof0(), ROOT), "proof itself is valid");
        require(!registry.verify(H0, proof0(), ROOT), "unanchored root verified");
        (bool included, uint64 batchId,,,) = registry.verifyAnchored(H0, proof0(), ROOT);
        require(!included && batchId == 0, "verifyAnchored on unanchored root");

        registry.anchor(keccak256("other"), 1);
        require(!registry.verify(H0, proof0(), keccak256("other")), "wrong anchored root");
    }

    function test_SingleLeafBatch() public {
        // A batch of one: root == leaf, empty proof.
        bytes32 leaf = registry.leafHash(H0);
        registry.anchor(leaf, 1);
        require(registry.verify(H0, new bytes32[](0), leaf), "single-leaf batch");
    }

    function testFuzz_TwoLeafTree(bytes32 a, bytes32 b) public {
        vm.assume(a != b);
        bytes32 la = registry.leafHash(a);
        bytes32 lb = registry.leafHash(b);
        bytes32 root = la < lb ? keccak256(abi.encode(la, lb)) : keccak256(abi.encode(lb, la));
        registry.anchor(root, 2);
        bytes32[] memory pa = new bytes32[](1);
        pa[0] = lb;
        bytes32[] memory pb = new bytes32[](1);
        pb[0] = la;
        require(registry.verify(a, pa, root), "a");
        require(registry.verify(b, pb, root), "b");
        require(!registry.verify(b, pa, root), "b with a's proof");
        (uint64 batchId,,, uint32 leafCount) = registry.getAnchor(root);
        require(batchId == 1 && leafCount == 2, "lookup");
    }

    function testFuzz_AnchorRejectsZeroAndDuplicates(bytes32 root, uint32 leafCount) public {
        if (root == bytes32(0)) {
            vm.expectRevert(abi.encodeWithSelector(AnchorRegistry.ZeroRoot.selector));
            registry.anchor(root, leafCount);
            return;
        }
        if (leafCount == 0) {
            vm.expectRevert(abi.encodeWithSelector(AnchorRegistry.ZeroLeafCount.selector));
            registry.anchor(root, leafCount);
            return;
        }
        require(registry.anchor(root, leafCount) == 1, "first");
        vm.expectRevert(abi.encodeWithSelector(AnchorRegistry.RootAlreadyAnchored.selector, root, uint64(1)));
        registry.anchor(root, leafCount);
        (uint64 batchId,,, uint32 storedCount) = registry.getAnchor(root);
        require(batchId == 1 && storedCount == leafCount, "packed slot round trip");
    }

    // --- gas ------------------------------------------------------------------------------
    // Execution gas of anchor() as seen from a calling contract (no 21,000 intrinsic cost, no
    // calldata cost). The full transaction cost is measured against anvil in
    // test/evm/contract.test.ts. Each test starts from a fresh setUp, so storage is cold.

    function _measureAnchor(bytes32 root, uint32 leafCount) internal returns (uint256 used) {
        registry.batchCount(); // warms the registry's account, not its storage slots
        uint256 before = gasleft();
        registry.anchor(root, leafCount);
        used = before - gasleft();
    }

    function test_GasAnchor() public {
        // First anchor (after deploy) and a following one, at several leaf counts: the cost
        // does not depend on leafCount.
        uint256 g1 = _measureAnchor(keccak256("g1"), 1);
        console.log("anchor() execution gas, first batch, leafCount 1:", g1);
        uint32[4] memory counts = [uint32(1), 100, 1000, 10_000];
        for (uint256 i = 0; i < counts.length; i++) {
            uint256 g = _measureAnchor(keccak256(abi.encode("g", i)), counts[i]);
            console.log("anchor() execution gas (warm head slot), leafCount", counts[i], g);
        }
        require(g1 < 30_000, "anchor() execution gas above 30,000");
    }

    // --- RFC 9162 tree (COSE Receipts) ------------------------------------------------------

    // The RFC 9162 tree of the same five hashes H0..H4 (leaf = the 32 hash bytes, in this order),
    // computed with src/anchoring/rfc9162.ts, which test/anchoring/rfc9162.test.ts checks against the
    // RFC 6962 reference vectors of transparency-dev/merkle.
    bytes32 internal constant LOG_ROOT = 0xbd89af0503000d1027183d3c721c31011e558dbce45e0c9fc4c361eb45946cec;
    bytes32 internal constant H2 = 0xa54647ec69aeb0c2896f610add8f1fba6042d3d489d70b248c34a17bd18164d3;
    bytes32 internal constant H3 = 0xfb29a412fee1fb71c25b316ea4a362f9b1450d48b2587a0210480b94a97a7a35;

    function logProof(uint256 i) internal pure returns (bytes32[] memory p) {
        if (i == 4) {
            p = new bytes32[](1);
            p[0] = 0x25b59f336701f1c6bd9f48fb790febddf0b83fd5a9249ab2efc2dfed45860a36;
            return p;
        }
        p = new bytes32[](3);
        p[0] = [
            bytes32(0x68aa36f694114de7d350683ed65ceb1e9676b4b21c3a4d0a01c96a3f7c130b44),
            0x9d39ebfc4db3ca73190e91f583830e2d6cc63152324b84935d2dfff3f21c1e19,
            0x7da363dcb3616b7a381bfe713329cd6b176e96310bca32f58c1d3a37317736f8,
            0x28521f3acdd60aac748cd6f5eafc76609244b2824f0e01e1fb226d3e3694ace2
        ][i];
        p[1] = i < 2
            ? bytes32(0x2d43cb57e133c82a01caf932665cf8458390bfc25bd050898376b644df9769b1)
            : bytes32(0xc3326953d7b5419f81952cce71e2dced88cb69454ad3064303a47ae3a497887d);
        p[2] = 0xcef8861c4f85e041638682e73e15d2f403ac1f796a74a0993a37ca2c52ab385c;
    }

    function logLeaves() internal pure returns (bytes32[5] memory) {
        return [H0, H1, H2, H3, H4];
    }

    function test_LogLeafHash() public view {
        require(
            registry.logLeafHash(H0) == 0x9d39ebfc4db3ca73190e91f583830e2d6cc63152324b84935d2dfff3f21c1e19,
            "logLeafHash(H0)"
        );
    }

    function test_VerifyLogInclusionRealProofs() public view {
        bytes32[5] memory leaves = logLeaves();
        for (uint256 i = 0; i < 5; i++) {
            require(registry.verifyLogInclusion(leaves[i], i, 5, logProof(i), LOG_ROOT), "log proof rejected");
        }
    }

    function test_VerifyLogInclusionRejectsWrongIndexSizeLeafRootOrProof() public view {
        bytes32[5] memory leaves = logLeaves();
        for (uint256 i = 0; i < 5; i++) {
            bytes32[] memory p = logProof(i);
            require(!registry.verifyLogInclusion(leaves[i], (i + 1) % 5, 5, p, LOG_ROOT), "wrong index accepted");
            // (Size 6 would pass for i < 4: the path of a leaf in the left 4-leaf subtree has the same
            // shape in trees of 5 to 8 leaves, so RFC 9162 binds the size only through the root.)
            require(!registry.verifyLogInclusion(leaves[i], i, 3, p, LOG_ROOT), "smaller size accepted");
            require(!registry.verifyLogInclusion(leaves[i], i, 10, p, LOG_ROOT), "double size accepted");
            require(!registry.verifyLogInclusion(leaves[(i + 1) % 5], i, 5, p, LOG_ROOT), "wrong leaf accepted");
            require(!registry.verifyLogInclusion(leaves[i], i, 5, p, ROOT), "wrong root accepted");
            require(!registry.verifyLogInclusion(leaves[i], 5, 5, p, LOG_ROOT), "index == size accepted");
            p[0] ^= bytes32(uint256(1));
            require(!registry.verifyLogInclusion(leaves[i], i, 5, p, LOG_ROOT), "tampered proof accepted");
            bytes32[] memory longer = new bytes32[](p.length + 1);
            bytes32[] memory good = logProof(i);
            for (uint256 j = 0; j < good.length; j++) longer[j] = good[j];
            longer[good.length] = LOG_ROOT;
            require(!registry.verifyLogInclusion(leaves[i], i, 5, longer, LOG_ROOT), "trailing element accepted");
        }
    }

    function test_SingleLeafLog() public view {
        bytes32 leaf = sha256(abi.encodePacked(bytes1(0x00), H0));
        require(registry.verifyLogInclusion(H0, 0, 1, new bytes32[](0), leaf), "single leaf");
        require(!registry.verifyLogInclusion(H0, 0, 0, new bytes32[](0), leaf), "empty tree");
    }

    function testFuzz_TwoLeafLog(bytes32 a, bytes32 b) public view {
        bytes32 la = sha256(abi.encodePacked(bytes1(0x00), a));
        bytes32 lb = sha256(abi.encodePacked(bytes1(0x00), b));
        bytes32 root = sha256(abi.encodePacked(bytes1(0x01), la, lb));
        bytes32[] memory pa = new bytes32[](1);
        pa[0] = lb;
        bytes32[] memory pb = new bytes32[](1);
        pb[0] = la;
        require(registry.verifyLogInclusion(a, 0, 2, pa, root), "left leaf");
        require(registry.verifyLogInclusion(b, 1, 2, pb, root), "right leaf");
        if (a != b) require(!registry.verifyLogInclusion(b, 0, 2, pa, root), "swapped leaf accepted");
    }

    function test_AnchorWithLogRootEmitsBothInOneTransaction() public {
        vm.expectEmit(true, true, true, true);
        emit Anchored(1, ROOT, address(this), 5);
        vm.expectEmit(true, true, true, true);
        emit LogRootAnchored(1, LOG_ROOT);
        require(registry.anchorWithLogRoot(ROOT, 5, LOG_ROOT) == 1, "batch id");
        (uint64 batchId,,, uint32 leafCount) = registry.getAnchor(ROOT);
        require(batchId == 1 && leafCount == 5, "stored like anchor()");
        require(registry.verify(H0, proof0(), ROOT), "OpenZeppelin proof still verifies");
        // The same checks as anchor(): duplicates, zero values, role.
        vm.expectRevert(abi.encodeWithSelector(AnchorRegistry.RootAlreadyAnchored.selector, ROOT, uint64(1)));
        registry.anchorWithLogRoot(ROOT, 5, LOG_ROOT);
        vm.expectRevert(abi.encodeWithSelector(AnchorRegistry.ZeroRoot.selector));
        registry.anchorWithLogRoot(keccak256("x"), 5, bytes32(0));
        vm.expectRevert(abi.encodeWithSelector(AnchorRegistry.ZeroLeafCount.selector));
        registry.anchorWithLogRoot(keccak256("x"), 0, LOG_ROOT);
        bytes32 role = registry.ANCHORER_ROLE();
        vm.expectRevert(
            abi.encodeWithSelector(IAccessControl.AccessControlUnauthorizedAccount.selector, STRANGER, role)
        );
        vm.prank(STRANGER);
        registry.anchorWithLogRoot(keccak256("x"), 5, LOG_ROOT);
    }

    function test_GasAnchorWithLogRoot() public {
        _measureAnchor(keccak256("first"), 1); // both measured with the head slot warm
        uint256 plain = _measureAnchor(keccak256("p"), 1000);
        registry.batchCount();
        uint256 before = gasleft();
        registry.anchorWithLogRoot(keccak256("l"), 1000, LOG_ROOT);
        uint256 withLog = before - gasleft();
        console.log("anchor() execution gas, leafCount 1000:", plain);
        console.log("anchorWithLogRoot() execution gas, leafCount 1000:", withLog);
        console.log("added by the log root:", withLog - plain);
        require(withLog < plain + 3_000, "the log root adds more than 3,000 gas");
    }
}
