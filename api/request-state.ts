import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { AppState, Credential, StreamedBody } from './context.ts';
import type { KeySession } from './auth/key-sessions.ts';

/**
 * The per-request state. Its unit of work is forked only when a handler first touches the
 * database; a getter on a class costs nothing per request, unlike defining one per object.
 */
export class RequestState implements AppState {
  requestId = '';
  auth?: Credential;
  session?: KeySession;
  rawBody?: unknown;
  streamedBody?: StreamedBody;
  readonly #orm: MikroORM;
  #em?: EntityManager;

  constructor(orm: MikroORM) {
    this.#orm = orm;
  }

  get em(): EntityManager {
    return (this.#em ??= this.#orm.em.fork());
  }
}
