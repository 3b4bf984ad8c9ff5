// Organizations' SQL logins (SPEC §24): what the server adds to what the database decides.
// It draws the login's name and password, hands the database only the password's
// SCRAM-SHA-256 verifier (rowgate.create_sql_credential makes the role), and builds the
// URL the merchant hands to psql or a BI tool. Ending revoked logins' sessions is
// src/upkeep/sql-login-sessions.ts.
import { randomBytes } from 'node:crypto';
import { scramVerifier } from './analysts.ts';

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** `rg_sql_` and 20 random base32 characters (100 bits), lower case: a plain SQL identifier. */
export function newLoginName(): string {
  const bytes = randomBytes(20);
  let name = 'rg_sql_';
  for (const byte of bytes) name += BASE32[byte & 31];
  return name;
}

export interface NewLogin {
  login: string;
  password: string;
  /** what the database stores; the password itself never reaches SQL */
  verifier: string;
}

export function newLogin(): NewLogin {
  const login = newLoginName();
  const password = randomBytes(24).toString('base64url');
  return { login, password, verifier: scramVerifier(password) };
}

/**
 * The URL a login connects with: the analysts' host when one is configured (a standby may
 * serve them), else the database the server uses, with the login's name and password.
 * A server reached over a Unix socket is named by its socket folder as `host`, as psql reads it.
 */
export function loginUrl(base: string, login: string, password: string): string {
  const url = new URL(base);
  url.username = login;
  url.password = encodeURIComponent(password);
  return url.toString();
}
