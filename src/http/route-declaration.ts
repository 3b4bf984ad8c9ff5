// The shape of one entry of the route table. The table (src/server/route-table.ts) drives the
// Express router, the authentication and scope checks, validation and the OpenAPI
// document; nothing else declares a route.
import type { Request, Response } from 'express';
import type { z } from 'zod';
import type { Authorization } from '../auth/authorize.ts';
import type { Scope } from '../auth/scopes.ts';
import type { Tx } from '../db/pool.ts';
import type { HandlerServer } from './handler-server.ts';
import type { Mailer } from '../core/mail.ts';
import type { ErrorFormat } from '../core/request-record.ts';
import type { CredentialKind } from '../auth/tokens.ts';
import type { SubjectKind } from '../auth/authenticate.ts';
import type { Effect } from '../db/placement.ts';
import type { Explanation } from './explanation.ts';
import type { ApiVersions } from '../core/versions.ts';

/**
 * Who may call an endpoint: the credential kinds it accepts and the scopes (any of) it needs.
 * No credential kinds (`access.anonymous`): the endpoint reads no credential and runs its
 * transaction as rowgate_anonymous, with no subject (sign-in, the OAuth2 token endpoints).
 */
export interface Access {
  credentials: readonly CredentialKind[];
  scopes: readonly Scope[];
}

/** Whether an endpoint takes no credential at all. */
export const isAnonymous = (a: Access) => a.credentials.length === 0;

const userCredentials = ['web_session', 'personal_access_token', 'oauth2_user_token'] as const;
const organizationCredentials = ['organization_access_token', 'oauth2_organization_token'] as const;

/** Access classes of user-personal endpoints (SPEC §4). */
export const access = {
  webUserRead: { credentials: ['web_session'], scopes: ['user:read', 'user:write'] },
  webUserWrite: { credentials: ['web_session'], scopes: ['user:write'] },
  webPayoutsRead: { credentials: ['web_session'], scopes: ['payouts:read', 'payouts:write'] },
  webPayoutsWrite: { credentials: ['web_session'], scopes: ['payouts:write'] },
  userRead: { credentials: userCredentials, scopes: ['user:read', 'user:write'] },
  userWrite: { credentials: userCredentials, scopes: ['user:write'] },
  /** organization data: User and Organization subjects, with any of `scopes` */
  organization: (...scopes: Scope[]): Access => ({ credentials: [...userCredentials, ...organizationCredentials], scopes }),
  /** organization data that only User subjects reach */
  organizationUser: (...scopes: Scope[]): Access => ({ credentials: userCredentials, scopes }),
  customerPortal: (...scopes: Scope[]): Access => ({ credentials: ['customer_session', 'member_session'], scopes }),
  /** no credential: the transaction runs as rowgate_anonymous, with no subject */
  anonymous: { credentials: [], scopes: [] },
} satisfies Record<string, Access | ((...s: Scope[]) => Access)>;

export { readScopes, writeScopes } from '../auth/scopes.ts';

type ZodObj = z.ZodObject;

/**
 * Whom a request authenticates (SPEC §2). A handler reads it to shape its input
 * (which fields a kind of subject must name), never to decide what the subject
 * may do: the transaction runs under the subject's role and settings, and the
 * database decides that.
 */
export interface Subject {
  kind: SubjectKind;
  id: string;
  credentialKind: CredentialKind;
  /** with the read scopes its write scopes imply */
  scopes: ReadonlySet<string>;
}

/**
 * What a handler gets. A JSON read (a GET answering JSON) runs one statement:
 * the pipeline sends it with the authentication and its commit
 * (src/http/pipeline.ts), and a second statement is an error; its handler starts
 * before the authentication has answered, so it may not read `subject`.
 */
interface Context<P, Q, B> {
  tx: Tx;
  /** the server secret that keys token hashes */
  secret: string;
  mailer: Mailer;
  params: P;
  query: Q;
  body: B;
  req: Request;
  res: Response;
  /** the SQL logins' URL, the pool's size, transactions after this one (src/http/handler-server.ts) */
  server: HandlerServer;
  /**
   * The request's API version (SPEC §23). A JSON read's handler starts before it is
   * settled unless the header names it: only a route that says `rendersEventData` reads it.
   */
  version: string;
  /** the API versions this server answers in: what renders stored event data in `version` */
  versions: ApiVersions;
}

interface PublicContext {
  req: Request;
  res: Response;
}

interface RouteBase {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** OpenAPI-style path: `/v1/products/{id}` */
  path: string;
  /**
   * Whether the operation reads or writes, declared, never inferred from the method:
   * a read runs where src/db/placement.ts places reads (a standby that will do),
   * claims no Idempotency-Key and carries no Rowgate-Consistency; a POST that only
   * reads (a check) says `reads`.
   */
  effect: Effect;
  operationId: string;
  summary: string;
  tag: string;
  description?: string;
  status: 200 | 201 | 202 | 204 | 302;
  response?: z.ZodType;
  /**
   * `text/html`: the handler sends an HTML page itself; `export`: it streams CSV or NDJSON
   * itself (SPEC §24); default: `response`, as JSON
   */
  responseType?: 'text/html' | 'export';
  /** a list exported whole as `GET /v1/exports/{exportedAs}` (SPEC §24): its access, filters and items, without pages */
  exportedAs?: string;
  /** `page`: an HTML document's security headers (helmet's defaults) instead of an API answer's (src/http/security-headers.ts) */
  headers?: 'page';
  /** statuses documented beside the success one (401/403/422 are added from the access) */
  errors?: readonly number[];
  /** the body's accepted media types (default JSON only); any other is a 415 */
  bodyTypes?: readonly BodyType[];
  /** the input carries secrets (tokens reported leaked): a 422 says where each issue is, never what was sent */
  secretInput?: true;
  /**
   * `oauth2`: errors have RFC 6749's shape `{error, error_description}` (the OAuth2
   * protocol endpoints); `oauth2-registration`: bad client metadata is RFC 7591's
   * 400 `invalid_redirect_uri` or `invalid_client_metadata` in that shape, and
   * the rest SPEC §7's (it is a /v1 endpoint of a signed-in user); otherwise
   * SPEC §7's `{error, detail}`.
   */
  errorFormat?: ErrorFormat;
  /**
   * The OAuth2 client authenticates itself (RFC 6749 §2.3.1) the way it
   * registered (src/oauth2/client-auth.ts): the OpenAPI document offers HTTP
   * Basic, or none (the id and secret in the body, or a public client's id alone).
   */
  clientAuthentication?: true;
}

export type BodyType = 'json' | 'form';

export interface ApiRoute<P extends ZodObj = ZodObj, Q extends ZodObj = ZodObj, B extends z.ZodType = z.ZodType> extends RouteBase {
  access: Access;
  params?: P;
  query?: Q;
  body?: B;
  /**
   * The route acts on the presenting credential itself (signing out): a retry
   * with its Idempotency-Key is the same request only through the same credential.
   */
  actsOnCredential?: true;
  /**
   * The answer holds events' stored data, which its handler renders in the
   * request's version (SPEC §23): where some version renders event data
   * otherwise than it is stored, the handler waits for the version to settle.
   */
  rendersEventData?: true;
  /**
   * The policy that guards the operation (SPEC §5 steps 3–5), asked of the
   * database by the pipeline before the handler runs; the OpenAPI document says it.
   */
  authorize?: Authorization<z.infer<P>>;
  /**
   * How the database finds what the operation acts on and which policy it asks
   * (rowgate_hidden.operations: src/http/operations.ts), where `authorize` does not
   * say it: lists, creates, reads through row-level security, user-personal endpoints.
   */
  explanation?: Explanation;
  /**
   * The answer, sent with `status`. Throwing an error rolls the transaction back;
   * returning an ApiError commits it and then answers the error (a failed attempt
   * that must be recorded, a reused refresh token whose family is revoked).
   */
  handler: (ctx: SubjectContext<z.infer<P>, z.infer<Q>, z.infer<B>>) => Promise<unknown>;
}

/** What the handler of an endpoint that takes a credential gets: its subject too. */
interface SubjectContext<P, Q, B> extends Context<P, Q, B> {
  subject: Subject;
}

/** What an anonymous endpoint's handler gets: no subject. */
type AnonymousContext<P, Q, B> = Context<P, Q, B>;

export interface AnonymousRoute<P extends ZodObj = ZodObj, Q extends ZodObj = ZodObj, B extends z.ZodType = z.ZodType>
  extends Omit<ApiRoute<P, Q, B>, 'access' | 'handler'> {
  handler: (ctx: AnonymousContext<z.infer<P>, z.infer<Q>, z.infer<B>>) => Promise<unknown>;
}

/** Endpoints outside the API's subjects: health, documents. */
export interface PublicRoute extends RouteBase {
  access: null;
  handler: (ctx: PublicContext) => Promise<unknown>;
}

// biome-ignore lint/suspicious/noExplicitAny: the table holds routes of every schema; each entry was checked against its own when declared
export type Route = ApiRoute<any, any, any> | PublicRoute;

export function route<P extends ZodObj = ZodObj, Q extends ZodObj = ZodObj, B extends z.ZodType = z.ZodType>(r: ApiRoute<P, Q, B>): Route {
  return r as Route;
}

/** An endpoint that takes no credential; its transaction runs as rowgate_anonymous. */
export function anonymousRoute<P extends ZodObj = ZodObj, Q extends ZodObj = ZodObj, B extends z.ZodType = z.ZodType>(
  r: AnonymousRoute<P, Q, B>,
): Route {
  return { ...r, access: access.anonymous } as Route;
}

export function publicRoute(r: Omit<PublicRoute, 'access'>): Route {
  return { ...r, access: null };
}
