import { describe, expect, it } from 'vitest';
import { AdminUsageError, parseAdminArgs, parseGrants } from '../../scripts/ops/admin';

describe("the admin CLI's arguments", () => {
  it('takes each command it has', () => {
    for (const command of [
      ['tenant', 'create', 'acme'],
      ['tenant', 'show', 'acme'],
      ['tenant', 'limits', 'acme'],
      ['key', 'issue', 'acme'],
      ['key', 'list', 'acme'],
    ]) {
      expect(parseAdminArgs(command).positionals).toEqual(command);
    }
    expect(parseAdminArgs(['key', 'revoke', 'acme', 'key_0123456789abcdef', '--jobs-table', 'Jobs']).values['jobs-table']).toBe('Jobs');
  });

  it('refuses an unknown command while parsing, before the entry script starts an emulator for it', () => {
    for (const command of [['create-key', 'dev'], ['tenant'], [], ['key', 'rotate', 'acme']]) {
      expect(() => parseAdminArgs(command)).toThrow(AdminUsageError);
    }
  });

  it('refuses a command without its tenant id, or a revoke without its key id, with the usage', () => {
    expect(() => parseAdminArgs(['tenant', 'show'])).toThrow(/^tenant show needs a tenant id\nUsage: npm run admin/);
    expect(() => parseAdminArgs(['key', 'issue', '--jobs-table', 'Jobs'])).toThrow(/^key issue needs a tenant id\n/);
    expect(() => parseAdminArgs(['key', 'revoke', 'acme'])).toThrow(/^key revoke needs a tenant id and a key id\nUsage/);
  });

  it('takes a tenant’s grants as exact ARNs, none or all, on tenant grants and tenant create only (decision 0194)', () => {
    const fn = 'arn:aws:lambda:eu-west-1:123456789012:function:acme-invoices';
    const secret = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme/token-AbC123';
    expect(parseAdminArgs(['tenant', 'grants', 'acme', '--arns', `${fn},${secret}`]).values.arns).toBe(`${fn},${secret}`);
    expect(parseAdminArgs(['tenant', 'create', 'acme', '--arns', 'none']).values.arns).toBe('none');
    // Commas and spaces both separate; a repeated ARN counts once.
    expect(parseGrants(` ${fn}, ${secret},${fn} `)).toEqual([fn, secret]);
    expect(parseGrants('none')).toEqual([]);
    expect(parseGrants('all')).toBeNull();
    for (const other of [
      'arn:aws:sqs:eu-west-1:123456789012:acme-exports.fifo',
      'arn:aws:events:eu-west-1:123456789012:event-bus/acme',
      'arn:aws:sns:eu-west-1:123456789012:acme-ops',
    ]) {
      expect(parseGrants(other)).toEqual([other]);
    }
  });

  it('refuses tenant grants without --arns, --arns on a command that does not set grants, and ARNs that are not exact', () => {
    expect(() => parseAdminArgs(['tenant', 'grants', 'acme'])).toThrow(/^tenant grants needs --arns/);
    expect(() => parseAdminArgs(['tenant', 'grants', 'acme', '--arns'])).toThrow(AdminUsageError);
    expect(() => parseAdminArgs(['tenant', 'limits', 'acme', '--arns', 'none'])).toThrow(/tenant limits takes no --arns/);
    expect(() => parseAdminArgs(['tenant', 'show', 'acme', '--arns', 'all'])).toThrow(/takes no --arns/);
    for (const bad of [
      // A wildcard, a prefix, a qualified function (a grant covers its every version), a secret without its suffix, another service.
      'arn:aws:lambda:eu-west-1:123456789012:function:acme-*',
      'arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme/*',
      'arn:aws:lambda:eu-west-1:123456789012:function:acme:live',
      'arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme/token',
      'arn:aws:s3:::acme',
      ',',
    ]) {
      expect(() => parseAdminArgs(['tenant', 'grants', 'acme', '--arns', bad]), bad).toThrow(/^--arns: /);
    }
  });
});
