#!/usr/bin/env node
// The `edge-redlock` command: `edge-redlock doctor [options]`, `edge-redlock dev [options]`.
import { readFileSync } from "node:fs";
import { DOCTOR_HELP, EXIT, doctor } from "./doctor.ts";

const HELP = `Usage: edge-redlock <command> [options]

Commands:
  doctor      check the configured databases (run "edge-redlock doctor --help")
  dev         run local nodes and write their variables to .dev.vars (run "edge-redlock dev --help")

Options:
  -h, --help      show this help
  -v, --version   print the version
`;

const [command, ...rest] = process.argv.slice(2);
const io = {
  env: process.env,
  out: (text: string) => void process.stdout.write(text),
  err: (text: string) => void process.stderr.write(text),
};

if (command === "doctor") {
  process.exitCode = await doctor(rest, io);
} else if (command === "dev") {
  // Loaded only here: it starts processes and needs ioredis, which `doctor` does not.
  const { dev } = await import("./dev.ts");
  process.exit(await dev(rest, io)); // the nodes are stopped: nothing else is left to finish
} else if (command === "-v" || command === "--version") {
  io.out(`${version()}\n`);
} else if (command === undefined || command === "-h" || command === "--help") {
  io.out(HELP);
} else {
  io.err(`edge-redlock: unknown command "${command}"\n\n${HELP}\n${DOCTOR_HELP}`);
  process.exitCode = EXIT.usage;
}

/** The version in the package's own package.json (two levels up from dist/cli, one from cli/). */
function version(): string {
  for (const path of ["../../package.json", "../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(path, import.meta.url), "utf8")) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === "edge-redlock" && pkg.version) return pkg.version;
    } catch {
      // not at this level
    }
  }
  return "unknown";
}
