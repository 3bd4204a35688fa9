import { connect } from 'node:net';
import { frame, FrameReader } from './protocol.ts';
import { AgentGoneError } from './client.ts';

// The sandbox's own end, held by its agent (paddock-agent.c's deadline): moved when the session's
// expiresAt moves, one connection that says the new moment and waits for the agent to hold it.

const RETIME_TIMEOUT_MS = 5000;

/** Tells the agent behind `socketPath` to end the sandbox at `endsAt` (wall-clock ms) instead. */
export function moveAgentDeadline(socketPath: string, endsAt: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    const frames = new FrameReader();
    const done = (err?: Error): void => {
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve();
    };
    const timer = setTimeout(() => done(new Error('the sandbox agent did not take the new deadline in time')), RETIME_TIMEOUT_MS);
    socket.on('data', (chunk: Buffer) => {
      frames.push(chunk);
      const next = frames.next();
      if (!next) return;
      if (next.type === 'T') done();
      else if (next.type === 'F') done(new Error(`the sandbox agent refused the new deadline: ${next.payload.toString('utf8')}`));
      else done(new Error(`the sandbox agent sent an unexpected frame (${JSON.stringify(next.type)})`));
    });
    socket.on('error', () => undefined);
    socket.on('close', () => done(new AgentGoneError('the sandbox agent closed the connection before it took the new deadline')));
    const ms = Buffer.alloc(8);
    ms.writeBigInt64LE(BigInt(Math.ceil(endsAt)));
    socket.write(frame('T', ms));
  });
}
