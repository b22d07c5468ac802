// Package sdkcheck holds tests only: each runs one provider's official SDK
// and intake's adapter for that provider on the same deliveries (as signed,
// and tampered with), and fails unless both give every delivery the
// expected verdict. It is a module of its own so that no provider SDK
// becomes a dependency of intake; .ci/run runs it. SDKs for Go are called
// in the tests; SDKs for Node.js only run through node (npm/sdk.mjs, their
// versions locked in npm/package-lock.json).
package sdkcheck
