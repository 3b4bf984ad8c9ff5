// Where a request runs and what its answer carries (SPEC §19), decided here once
// for REST (src/http/pipeline.ts) and GraphQL (src/graphql/requests.ts) alike. What a
// request does is declared, never inferred here: a route says whether it reads or
// writes (src/http/route-declaration.ts), a GraphQL query reads and a mutation writes.
// - A read runs on a hot standby that has replayed what it must see (its credential's
//   last write through this instance, or the Rowgate-Consistency token it sends back),
//   else on the primary; a standby that fails as the primary would not is left for the
//   primary (src/db/read-replicas.ts). It carries no token.
// - A write runs on the primary; its commit brings back the WAL position, which its
//   answer carries as Rowgate-Consistency and which this instance remembers for the
//   credential (src/db/consistency.ts).
import type pg from 'pg';
import { CONSISTENCY_HEADER, type Consistency, type Position } from './consistency.ts';
import type { ReadReplicas } from './read-replicas.ts';

/** What a request does to the data. */
export type Effect = 'reads' | 'writes';

/** The answer a write's token is set on (an Express or Node response). */
interface Answer {
  readonly headersSent: boolean;
  setHeader(name: string, value: string): unknown;
  on(event: 'finish', listener: () => void): unknown;
}

/** Where a read runs. */
export interface ReadPlace {
  readonly effect: 'reads';
  /** Runs one transaction on a standby that will do, else on the primary; again on the primary when the standby fails. */
  run<T>(transaction: (pool: pg.Pool) => Promise<T>): Promise<T>;
  /**
   * Where a read made of several transactions runs (a GraphQL query's, whose statements
   * grafast sends as it goes): `fallBack` names the pool to run a failed one again on, or
   * null when the failure is the read's own.
   */
  pools(): { pool: pg.Pool; fallBack(error: unknown): pg.Pool | null };
}

/** Where a write runs, and what its answer carries. */
export interface WritePlace {
  readonly effect: 'writes';
  /** whether its commit must bring back the WAL position (src/db/pool.ts, inTransaction's `position`) */
  readonly positioned: boolean;
  run<T>(transaction: (pool: pg.Pool) => Promise<T>): Promise<T>;
  /**
   * After a commit: the answer carries the token, and the credential's later reads here
   * see at least that. `committedAt`: the position the commit brought back; undefined
   * (a replayed answer, whose write committed earlier): the primary is asked.
   */
  committed(answer: Answer, committedAt?: string | null): Promise<void>;
  /**
   * A write whose commits another library makes (a GraphQL mutation's): the credential's
   * reads stay on the primary for the standbys' lag bound, from now and again once answered.
   */
  hold(answer: Answer): void;
}

export type Place = ReadPlace | WritePlace;

export interface PlacementOptions {
  primary: pg.Pool;
  /** read-your-writes across instances and standbys; none: no Rowgate-Consistency */
  consistency?: Consistency;
  /** hot standbys; none: every read on the primary */
  reads?: ReadReplicas;
}

export class Placement {
  readonly #options: PlacementOptions;

  constructor(options: PlacementOptions) {
    this.#options = options;
  }

  /**
   * Where a request runs. `credentialKey` names its credential (src/auth/credentials.ts'
   * credentialKey; undefined: none), asked only when a consistency is kept; `header` is
   * the Rowgate-Consistency it sent.
   */
  place(effect: Effect, credentialKey: () => string | undefined, header?: unknown): Place {
    const { consistency } = this.#options;
    const key = consistency ? credentialKey() : undefined;
    return effect === 'reads' ? this.#read(key, header) : this.#write(key);
  }

  #read(key: string | undefined, header: unknown): ReadPlace {
    const { primary, consistency, reads } = this.#options;
    const standby = reads && !consistency?.onPrimary(key) ? reads : undefined;
    if (!standby)
      return { effect: 'reads', run: (transaction) => transaction(primary), pools: () => ({ pool: primary, fallBack: () => null }) };
    // what the read must see: its credential's last write here, or the position it sends (any instance's)
    const position: Position | null = consistency?.required(key, header) ?? null;
    return { effect: 'reads', run: (transaction) => standby.read(position, transaction), pools: () => standby.readPool(position) };
  }

  #write(key: string | undefined): WritePlace {
    const { primary, consistency } = this.#options;
    return {
      effect: 'writes',
      positioned: consistency !== undefined,
      run: (transaction) => transaction(primary),
      async committed(answer, committedAt) {
        const token = await consistency?.written(key, committedAt);
        if (token && !answer.headersSent) answer.setHeader(CONSISTENCY_HEADER, token);
      },
      hold(answer) {
        if (!consistency || key === undefined) return;
        consistency.hold(key);
        answer.on('finish', () => consistency.hold(key));
      },
    };
  }
}
