package interrupt

// InstrumentPeriod is Instrument with another period (benchmarks compare).
func InstrumentPeriod(wasm []byte, period uint32) ([]byte, error) { return instrument(wasm, period) }
