package memory

type ExtismPointer uint64
