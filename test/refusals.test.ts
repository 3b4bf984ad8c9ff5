// The memory of refused addresses (src/operating/refusals.ts) follows the
// addresses refused now: an attacker spraying addresses that never come back
// cannot grow it for ever.
import { describe, expect, test } from 'vitest';
import { Refusals } from '../src/operating/refusals.ts';

describe('refused addresses', () => {
  test('an address is refused until its time, then forgotten', () => {
    const refusals = new Refusals();
    refusals.set('192.0.2.1', 2_000, 1_000);
    expect(refusals.get('192.0.2.1', 1_500)).toBe(2_000);
    expect(refusals.get('192.0.2.1', 2_000)).toBe(0);
    expect(refusals.size).toBe(0);
    expect(refusals.get('192.0.2.2', 1_000)).toBe(0);
  });

  test('a million addresses refused one after another, each for a second, never fill the memory', () => {
    const refusals = new Refusals(1_000);
    let largest = 0;
    // one new address every millisecond, each refused for one second: about a thousand live at once
    for (let i = 0; i < 1_000_000; i++) {
      refusals.set(`2001:db8::${i.toString(16)}`, i + 1_000, i);
      largest = Math.max(largest, refusals.size);
    }
    expect(largest).toBeLessThanOrEqual(4_000);
    // those still refused are all kept
    expect(refusals.get('2001:db8::f423f', 999_999)).toBe(1_000_999);
  });
});
