// Reads code blocks out of README.md, so a test runs what the README shows
// rather than a copy that can drift from it. A block is marked by an HTML
// comment on the line just before its fence: `<!-- readme-client: go/main.go -->`.
import { readFileSync } from "node:fs";
import path from "node:path";
import { ROOT } from "../server-process.js";

export interface ReadmeBlock {
  /** What the marker names, e.g. `go/main.go`. */
  name: string;
  /** The fence's info string (`go`, `sh`, …). */
  lang: string;
  /** The block's text, ending with a newline. */
  text: string;
}

/**
 * The README's section under `heading` (a whole heading line such as `### Run it`),
 * up to the next heading of the same level or above. Lines in fenced blocks are
 * not headings: a YAML or shell block has `# comments`.
 */
export function readmeSection(heading: string): string {
  const lines = readFileSync(path.join(ROOT, "README.md"), "utf8").split("\n");
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`README.md has no heading ${heading}`);
  const level = heading.indexOf(" ");
  let inFence = false;
  let end = start + 1;
  for (; end < lines.length; end++) {
    const line = lines[end] ?? "";
    if (line.startsWith("```")) inFence = !inFence;
    const hashes = /^(#+) /.exec(line)?.[1]?.length;
    if (!inFence && hashes !== undefined && hashes <= level) break;
  }
  return `${lines.slice(start + 1, end).join("\n")}\n`;
}

/** Every block of `section` marked `<!-- <marker>: <name> -->`, by name (a name marked twice throws). */
export function markedBlocks(section: string, marker: string): Map<string, ReadmeBlock> {
  const blocks = new Map<string, ReadmeBlock>();
  const re = new RegExp(`^<!-- ${marker}: (\\S+) -->\\n\`\`\`(\\w*)\\n([\\s\\S]*?)^\`\`\`$`, "gm");
  for (const m of section.matchAll(re)) {
    const [, name = "", lang = "", text = ""] = m;
    if (blocks.has(name)) throw new Error(`README.md marks two blocks ${marker}: ${name}`);
    blocks.set(name, { name, lang, text });
  }
  return blocks;
}

/** Splits a README command line into arguments: whitespace-separated, with "double-quoted" words kept whole. */
export function shellWords(line: string): string[] {
  return [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? "");
}
