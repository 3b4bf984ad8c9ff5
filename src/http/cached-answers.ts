// The answer cache's protocol for one route (the cache itself: src/auth/answer-cache.ts).
// A route declaring `cache: 'credential'` is answered from memory while the database has
// not said its answer changed; a write says so with its commit (CHANGED_USERS), and this
// server forgets those answers before it answers anybody.
import { type AnswerCache, type CachedAnswer, CHANGED_USERS } from '../auth/answer-cache.ts';
import type { Authenticated } from '../auth/authenticate.ts';
import { credentialKey, type PresentedCredential } from '../auth/credentials.ts';
import type { Tx } from '../db/pool.ts';
import { isAnonymous, type ApiRoute } from './route.ts';

/** A cached route's lookup for one request: the key, and the cache's generation when it asked. */
export interface CacheLookup {
  key: string;
  ticket: number | null;
}

/**
 * The cache as a route uses it; undefined when the route declares no cache or the
 * server keeps none.
 */
export function routeCache(route: ApiRoute, cache: AnswerCache | undefined) {
  if (route.cache && (route.method !== 'get' || isAnonymous(route.access) || route.params || route.query)) {
    throw new Error(`${route.operationId}: only a GET without parameters that takes a credential may be cached`);
  }
  if (!route.cache || !cache) return undefined;
  return {
    /**
     * The answer kept for this credential, or where to keep the one about to be
     * read (credentialKey).
     */
    lookup(credential: PresentedCredential): { answer: CachedAnswer; key?: undefined } | (CacheLookup & { answer?: undefined }) {
      const key = credentialKey(credential);
      const answer = cache.get(key);
      return answer ? { answer } : { key, ticket: cache.ticket() };
    },
    /** Keeps the answer just sent, unless something was forgotten since the lookup. */
    keep(lookup: CacheLookup, subject: Authenticated, body: string) {
      if (lookup.ticket === null) return;
      cache.put(
        lookup.ticket,
        lookup.key,
        { userId: subject.subjectId, scopes: subject.scopes, body, settings: subject.settings },
        subject.expiresAt === null ? null : Date.parse(subject.expiresAt),
      );
    },
  };
}

/**
 * A write's commit, carrying the question of which users' answers it changed
 * (null: none). Asked only when this server keeps answers.
 */
export async function commitAnnouncingChanges(tx: Tx): Promise<string | null> {
  if (tx.committed) return null;
  return (await tx.withCommit<{ users: string | null }>(CHANGED_USERS))?.users ?? null;
}
