// Serves the demo (after scripts/web-demo.sh) with the COOP/COEP headers that wasm threads need:
//   node examples/web-mnist/serve.mjs [--port 8080]
import {dirname} from 'node:path';
import {fileURLToPath} from 'node:url';

import {serve} from '../../tests/web/cdp.mjs';

const i = process.argv.indexOf('--port');
const port = i > 0 ? Number(process.argv[i + 1]) : 8080;
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error('usage: node examples/web-mnist/serve.mjs [--port 8080]');
  process.exit(2);
}
const server = await serve(dirname(fileURLToPath(import.meta.url)), {port, isolate: true});
console.log(`Ember's demo: ${server.url} (digits) and ${server.url}fashion.html (Ctrl-C stops)`);
