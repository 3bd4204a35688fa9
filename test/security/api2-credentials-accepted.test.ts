import { startSandboxStack } from '../helpers/sandbox-stack.ts';
import { sweepAuthSuite, workspacesOn } from './fixtures.ts';

// test-plan: once (the credential is checked before any runtime is asked)

// OWASP API2:2023 Broken Authentication, the shared credential suite's accepted cases on every
// authenticated route (a valid credential, the scheme in any case, a dashboard token crafted with
// the real secret), each with a real target, so that each reaches what the route does; what the
// route then asks of the runtime is its own suite's, on both runtimes. The refusals are in
// test/security/api2-broken-authentication.test.ts.

const stack = await startSandboxStack({ overrides: { PADDOCK_QUOTA_CONCURRENT_SANDBOXES: '50' } });
sweepAuthSuite(stack.apis[0]!, workspacesOn(stack.url), 'accepted');
