/** The baseline: a Fastify hello-world JSON POST server, as in DECISIONS.md. */
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.post('/hello', async (request) => ({ ok: true, echo: request.body }));
const address = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`listening at ${address}\n`);
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
