// Every line of the library and its Node-side folders within the width the formatter wraps at (biome.json's lineWidth):
// the formatter does not wrap comments or long strings, this catches them.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
type BiomeConfig = { formatter: { lineWidth: number } };
const width = (JSON.parse(readFileSync(join(root, "biome.json"), "utf8")) as BiomeConfig).formatter.lineWidth;
const folders = ["src", "cli", "tools", "dev", "bench", "chaos"];
const long: string[] = [];
for (const folder of folders) {
  for (const file of readdirSync(join(root, folder), { recursive: true }) as string[]) {
    if (!file.endsWith(".ts")) continue;
    readFileSync(join(root, folder, file), "utf8")
      .split("\n")
      .forEach((line, i) => {
        if ([...line].length > width) long.push(`${folder}/${file}:${i + 1}: ${[...line].length} characters`);
      });
  }
}
for (const line of long) console.error(line);
console.log(`line-width: ${long.length} line(s) over ${width} characters in ${folders.join(", ")}`);
process.exit(long.length === 0 ? 0 : 1);
