// Types of build-stamp.mjs (plain JavaScript: npm runs build.mjs before any TypeScript loader is installed).
export declare const STAMP_FILE: string;
export declare function sourcesDigest(dir: string): string;
