import { describe, expect, it } from 'vitest';
import { TenantsFullMemo } from '../../lambdas/app/in-flight-slot';

describe('the memo of tenants found at their in-flight limit', () => {
  it('tries a tenant it has not found full', () => {
    expect(new TenantsFullMemo().mayTry('t1', 1_000)).toEqual({ try: true });
  });

  it('does not try a tenant found full a moment ago, and tries it again once the moment has passed', () => {
    const memo = new TenantsFullMemo();
    memo.markFull('t1', 1_000);
    expect(memo.mayTry('t1', 1_499)).toEqual({ try: false });
    expect(memo.mayTry('t2', 1_100)).toEqual({ try: true });
    expect(memo.mayTry('t1', 1_500)).toEqual({ try: true });
  });

  it('tries each slot given back since the tenant was found full once, first', () => {
    const memo = new TenantsFullMemo();
    memo.markFull('t1', 1_000);
    memo.freed('t1', 3, 1_050);
    memo.freed('t1', 7, 1_060);
    expect(memo.mayTry('t1', 1_100)).toEqual({ try: true, freed: 3 });
    expect(memo.mayTry('t1', 1_100)).toEqual({ try: true, freed: 7 });
    expect(memo.mayTry('t1', 1_100)).toEqual({ try: false });
  });

  it('keeps the moment of the first finding when the tenant is found full again within it', () => {
    const memo = new TenantsFullMemo();
    memo.markFull('t1', 1_000);
    memo.freed('t1', 2, 1_050);
    memo.markFull('t1', 1_400);
    expect(memo.mayTry('t1', 1_450)).toEqual({ try: true, freed: 2 });
    expect(memo.mayTry('t1', 1_500)).toEqual({ try: true });
  });

  it('keeps no slot given back once the moment has passed: a tenant full once does not grow a list per run', () => {
    const memo = new TenantsFullMemo();
    memo.markFull('t1', 1_000);
    memo.freed('t1', 1, 1_100);
    for (let slot = 2; slot < 100; slot++) memo.freed('t1', slot, 1_500 + slot);
    expect(memo.keptFor('t1')).toBe(0);
    expect(memo.mayTry('t1', 1_600)).toEqual({ try: true });
  });

  it('is one per memo: a fresh one (a new process, or a test) has found no tenant full', () => {
    const memo = new TenantsFullMemo();
    memo.markFull('t1', 1_000);
    expect(new TenantsFullMemo().mayTry('t1', 1_100)).toEqual({ try: true });
  });
});
