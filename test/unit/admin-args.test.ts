import { describe, expect, it } from 'vitest';
import { AdminUsageError, parseAdminArgs } from '../../scripts/ops/admin';

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
});
