#!/usr/bin/env node
// `npx scheduler …` in this repository (package.json's `bin`): runs the CLI's TypeScript through tsx,
// as the repository runs all its scripts. The built client package (clients/package.json) runs its
// compiled JavaScript instead (decision 0100).
import { register } from 'tsx/esm/api';

register();
await import('../clients/cli/main.ts');
