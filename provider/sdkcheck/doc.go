// Package sdkcheck holds tests only: each runs one provider's official SDK
// and intake's adapter for that provider on the same deliveries (as signed,
// and tampered with), and fails unless both give every delivery the
// expected verdict. It is a module of its own so that no provider SDK
// becomes a dependency of intake; .ci/run runs it.
package sdkcheck
