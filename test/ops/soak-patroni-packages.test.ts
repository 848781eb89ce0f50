// `npm run soak:patroni` installs nothing: where Patroni, etcd or HAProxy are missing it names the Debian
// packages, prints the one apt-get line and exits 3 before starting anything (docs/operating.md,
// "Patroni, etcd and HAProxy"). Here the programs are hidden by a PATH that holds Node only.
//   npx vitest run test/ops/soak-patroni-packages.test.ts
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { expect, it } from "vitest"

const root = Path.resolve(import.meta.dirname, "../..")

it("without the packages: the apt-get line, exit 3, nothing started", () => {
  const bin = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-nopatroni-"))
  const before = Fs.readdirSync(Os.tmpdir()).filter((d) => d.startsWith("anchord-patroni-")).length
  try {
    Fs.symlinkSync(process.execPath, Path.join(bin, "node"))
    const run = ChildProcess.spawnSync(Path.join(bin, "node"), [Path.join(root, "scripts/soak-patroni.ts")], {
      cwd: root,
      env: { PATH: bin, HOME: bin },
      encoding: "utf8",
      timeout: 60_000
    })
    expect(run.status).toBe(3)
    expect(run.stderr).toContain("apt-get install -y patroni etcd-server haproxy")
    expect(run.stderr).toMatch(/needs Debian's patroni, etcd-server/)
    expect(run.stderr).toContain("installs nothing")
    expect(run.stdout).not.toContain("etcd on")
    expect(Fs.readdirSync(Os.tmpdir()).filter((d) => d.startsWith("anchord-patroni-")).length).toBe(before)
  } finally {
    Fs.rmSync(bin, { recursive: true, force: true })
  }
}, 60_000)
