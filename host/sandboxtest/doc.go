// Package sandboxtest holds the end-to-end tests of the ten built-in
// plugins (sandbox_* and browser_*): each test builds the plugins from source
// (plugins/sandbox/*), starts the real host with them as its built-ins and
// talks JSON-RPC to it over real HTTP, as an MCP client would. It has no
// code of its own outside the tests.
//
//	go test ./host/sandboxtest            # run
//	go test ./host/sandboxtest -update    # rewrite the golden exchanges in testdata/
package sandboxtest
