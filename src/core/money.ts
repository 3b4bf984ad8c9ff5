// How money is written in bodies: its currency, and the country of an account that
// holds it. Accounts, payout accounts, products, orders, refunds and transactions
// share these fields, so each is declared once, below the resources.
import { z } from 'zod';
import { doc } from './fields.ts';

export const currency = doc(z.string().regex(/^[a-z]{3}$/, 'An ISO 4217 code, lower case'), 'Currency (ISO 4217, lower case).', 'usd');
export const country = doc(z.string().regex(/^[A-Z]{2}$/, 'An ISO 3166-1 alpha-2 code, upper case'), 'Country (ISO 3166-1 alpha-2).', 'US');
