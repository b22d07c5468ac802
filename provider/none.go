package provider

// noneAdapter accepts every request unverified. It exists so that a
// connection without signatures is an explicit choice, never a default.
// It takes the same id_header|id_field and type_header|type_field settings
// as hmac; events are "none.<type>".
type noneAdapter struct{}

func init() { Register(noneAdapter{}) }

func (noneAdapter) Name() string { return "none" }

func (noneAdapter) ValidateConfig(cfg Config) error {
	_, err := parseIDTypeFields(cfg)
	return err
}

func (noneAdapter) Verify(*Request, [][]byte, Config) error { return nil }

func (noneAdapter) Interpret(r *Request, cfg Config) (Interpretation, error) {
	f, err := parseIDTypeFields(cfg)
	if err != nil {
		return Interpretation{}, configError("none", err)
	}
	return f.interpret("none", r)
}
