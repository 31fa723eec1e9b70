// The env-file reader lives with the test bed, which reads .dev.vars too; the CLI's name for it stays.
export { parseEnvFile } from "../dev/env-file.ts";
