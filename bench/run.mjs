// `npm run bench`: every scenario, one after the other, each against its own
// database on the bench Postgres (embedded under .data/bench, port 54445, or the
// server of DATABASE_URL), then one table. Run it alone on the machine (e.g. under
// `flock /tmp/cpu.lock`): the figures are only as quiet as the two cores.
import { backlogScenario } from './backlog.bench.mjs';
import { claimScenario } from './claim.bench.mjs';
import { costScenario } from './cost.bench.mjs';
import { dispatchScenario } from './dispatch.bench.mjs';
import { fairnessScenario } from './fairness.bench.mjs';
import { fanoutDrainScenario, fanoutScenario } from './fanout.bench.mjs';
import { flatScenario } from './flat.bench.mjs';
import { hostCapScenario } from './host-cap.bench.mjs';
import { ingestScenario } from './ingest.bench.mjs';
import { freshDatabase, main } from './lib/harness.mjs';
import { latencyScenario } from './latency.bench.mjs';
import { peerScenario } from './peer.bench.mjs';
import { scaleScenario } from './scale.bench.mjs';
import { statusScenario } from './status.bench.mjs';
import { transportScenario } from './transport.bench.mjs';

await main(async (server) => [
  ...(await peerScenario(server)),
  ...(await transportScenario()),
  ...(await dispatchScenario(await freshDatabase(server, 'bench_dispatch'), 'empty tables')),
  ...(await hostCapScenario(server)),
  ...(await backlogScenario(server)),
  ...(await fairnessScenario(server)),
  ...(await latencyScenario(await freshDatabase(server, 'bench_latency'))),
  ...(await ingestScenario(await freshDatabase(server, 'bench_ingest'))),
  ...(await fanoutScenario(await freshDatabase(server, 'bench_fanout'))),
  ...(await fanoutDrainScenario(await freshDatabase(server, 'bench_fanout_drain'))),
  ...(await scaleScenario(await freshDatabase(server, 'bench_scale'))),
  ...(await statusScenario(server)),
  ...(await flatScenario(server)),
  ...(await claimScenario(server)),
  ...(await costScenario(server)),
]);
