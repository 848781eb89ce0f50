import init from "./0001_init.ts"

/** Versioned migrations, applied in order by `anchord migrate` and at every start. */
export const migrations = {
  "0001_init": init
}
