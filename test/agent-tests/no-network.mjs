// Preloaded into the CLI by test/agent-tests/cli.test.ts: records every socket the process opens
// (TCP and UDP), so the test can check that an offline run opens none beyond loopback.
import dgram from 'node:dgram';
import fs from 'node:fs';
import net from 'node:net';

const log = process.env.SOCKET_LOG;
const note = (what) => fs.appendFileSync(log, `${what}\n`);
const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) {
  // net.connect() hands the socket its normalised arguments as one array.
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  const target = typeof first === 'object' && first !== null ? (first.path ?? `${first.host ?? 'localhost'}:${first.port}`) : `${args[1] ?? 'localhost'}:${first}`;
  note(`tcp ${target}`);
  return connect.apply(this, args);
};
const send = dgram.Socket.prototype.send;
dgram.Socket.prototype.send = function (...args) {
  note(`udp ${String(args.find((a) => typeof a === 'string') ?? '?')}`);
  return send.apply(this, args);
};
