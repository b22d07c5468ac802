package inbox

// Envelope lets the external tests compare the inbox's wire form with the
// envelope intake sends.
type Envelope = envelope
