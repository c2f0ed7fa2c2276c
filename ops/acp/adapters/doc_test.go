// Package adapters is the adapter suite: it runs the published ACP adapters (claude-agent-acp,
// codex-acp, gemini-cli, installed from npm by .ci/run into .ci/adapters) against a fake model
// API on loopback, sends each a resolved prompt of 20 files, and checks that every file reaches
// the model intact: an image's bytes equal to the upload, a by-path file named by a path that
// exists and holds the upload's bytes, after the adapter's own handling.
package adapters
