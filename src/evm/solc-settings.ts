// Compiler version and settings shared by hardhat.config.ts and scripts/build-contract.ts, so
// Hardhat's build and the committed artifact (src/evm/AnchorRegistry.artifact.json) come from
// the same compiler input. The compiler is the npm `solc` package (solcjs), pinned in
// package.json; no compiler is ever downloaded.

export const SOLC_VERSION = "0.8.28"

export const SOLC_SETTINGS = {
  // `cancun` runs on Ethereum mainnet/Sepolia/Holesky, the usual L2s, anvil and Hardhat's EDR.
  evmVersion: "cancun",
  optimizer: { enabled: true, runs: 1_000_000 },
  // No metadata hash in the bytecode: the bytecode then depends only on the source text and
  // these settings, not on file paths, so Hardhat's build and our artifact are byte-identical.
  metadata: { bytecodeHash: "none" }
} as const
