// `npm run lint` (ESLint, with dprint run as the @effect/dprint rule) and `npm run format` (its layout
// fixes only). Why these tools and these settings: docs/code-style.md.
import effect from "@effect/eslint-plugin"
import js from "@eslint/js"
import { defineConfig } from "eslint/config"
import globals from "globals"
import tseslint from "typescript-eslint"

// dprint-plugin-typescript options, measured against the tree as it was written (docs/code-style.md):
// Effect's own settings, but 160 columns, imports kept in their order and hanging indentation when a line
// is too long, which leaves the fewest lines to change.
const dprint = {
  indentWidth: 2,
  lineWidth: 160,
  semiColons: "asi",
  quoteStyle: "alwaysDouble",
  trailingCommas: "never",
  operatorPosition: "maintain",
  "arrowFunction.useParentheses": "force",
  preferHanging: true,
  quoteProps: "preserve",
  "module.sortImportDeclarations": "maintain",
  // Re-exports too: the order of `export … from` is the modules' evaluation order.
  "module.sortExportDeclarations": "maintain",
  "importDeclaration.sortNamedImports": "maintain",
  "exportDeclaration.sortNamedExports": "maintain"
}

export default defineConfig(
  {
    // Generated or bundled: written by a tool, never by hand.
    ignores: [
      "dist/**",
      "artifacts/**",
      "cache/**",
      "coverage/**",
      "ignition/deployments/**",
      "test/openapi/anchord-api.ts",
      "web/console/console.js",
      "web/verify/verify.js"
    ]
  },
  {
    files: ["**/*.{ts,mts,cts,js,mjs,cjs}"],
    extends: [js.configs.recommended, tseslint.configs.recommended],
    plugins: { "@effect": effect },
    languageOptions: { globals: { ...globals.node } },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      "@effect/dprint": ["error", { config: dprint }],
      // tsc (noUnusedLocals, noUnusedParameters) reports these already, with the `_` convention.
      "@typescript-eslint/no-unused-vars": "off",
      // Effect.gen bodies with nothing to yield are a normal way to build a service.
      "require-yield": "off",
      // Wire values and third-party shapes (viem, Fabric protobufs) are typed `any` where a schema decodes them next.
      "@typescript-eslint/no-explicit-any": "off",
      // Effect services are declared as `class X extends Context.Service<X, {...}>()(...) {}`.
      "@typescript-eslint/no-extraneous-class": "off",
      // A control character is what some validation patterns (header values, JCS escapes) must match.
      "no-control-regex": "off",
      // `catch {}` says "this failure is expected and changes nothing" (a probe, a best-effort cleanup).
      "no-empty": ["error", { allowEmptyCatch: true }],
      // `let timer` declared before a closure that reads it and assigned later: `const` there would be a TDZ error.
      "prefer-const": ["error", { ignoreReadBeforeAssign: true }]
    }
  },
  {
    // CommonJS: the Fabric chaincode, build helpers run by npm.
    files: ["**/*.cjs", "contracts/fabric/**/*.js"],
    languageOptions: { sourceType: "commonjs" },
    rules: { "@typescript-eslint/no-require-imports": "off" }
  },
  {
    // Browser code (type-checked by web/tsconfig.json with the DOM library).
    files: ["web/console/src/**", "web/verify/src/**", "web/shims/**"],
    languageOptions: { globals: { ...globals.browser } }
  }
)
