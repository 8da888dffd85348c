package codexconfig

// WorkspaceWriteArgs are the `codex` options that narrow Codex's
// workspace-write sandbox to the working directory. By default that sandbox
// also lets every tool process write /tmp and $TMPDIR, and one app-server
// pod serves several sessions: a session's tools could leave files there
// for another session's tools to read or run. With these options a
// session's tools write only their own working directory; /tmp stays
// readable. The app-server process itself is not in the sandbox and keeps
// its /tmp.
func WorkspaceWriteArgs() []string {
	return []string{
		"-c", "sandbox_workspace_write.exclude_slash_tmp=true",
		"-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true",
	}
}
