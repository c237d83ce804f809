// Package boot is what every bbs subcommand does before its own work, in one place: parse
// its flags, build the logger, serve its metrics, open the store and load its TLS files
// (Command, Start), from the environment variables the commands share (EnvOr, SecretFromEnv,
// ...). The subcommands of cmd/bbs and the stacks `bbs dev` and `bbs cluster` run
// (internal/devstack, internal/clusterstack) use it, so that a process started alone and one
// started inside a stack open their store and listeners the same way.
package boot
