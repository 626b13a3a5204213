package mcp

// MaxBodyBytes bounds an MCP request body: the HTTP server answers a larger
// one with 413, and the deployment's router (host/deploy) is configured
// with the same bound.
const MaxBodyBytes = 8 << 20
