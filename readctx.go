package intake

import "context"

// operatorRead marks a context as an operator's read (a list, a search, an
// export, the overview) rather than the pipeline's own work.
type operatorRead struct{}

// OperatorRead marks ctx as an operator's read: a store runs it on
// connections the pipeline never waits for (DESIGN §26), within the
// deadline ctx carries.
func OperatorRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, operatorRead{}, true)
}

// IsOperatorRead reports whether ctx is an operator's read.
func IsOperatorRead(ctx context.Context) bool {
	v, _ := ctx.Value(operatorRead{}).(bool)
	return v
}
