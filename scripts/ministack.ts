// `npm run ministack:install`: installs MiniStack (for the lambda target's integration test) ahead
// of the tests, so CI keeps pip's time and output apart from the test run. The test starts its own.
import { installMiniStack } from './local/ministack';

console.log(`ministack ready at ${installMiniStack()}`);
