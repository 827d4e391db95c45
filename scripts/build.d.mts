/** scripts/build.mjs, for the tests that import it. */
export declare const BUILD_STAMP: string;
/** Why dist/ under `root` must be built again, or undefined when it is up to date. */
export declare function staleReason(root: string): string | undefined;
