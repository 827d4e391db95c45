// One leasehold process: `worker.ts expiry-worker` or `worker.ts delivery-worker`.
// In your deployment this is `npx leasehold expiry-worker` (the installed
// command); the example runs the repository's source through tsx.
import { main } from '../../src/cli/main.js';

process.exitCode = await main(process.argv);
