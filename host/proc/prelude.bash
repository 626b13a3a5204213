__aiod_run() { __aiod_seq=$1 __aiod_tok=$2 __aiod_cwd=$3 __aiod_cdfail=; builtin printf '' >|"$__aiod_d/ok"; if [[ -n $3 ]]; then builtin cd -- "$3" 2>/dev/null || __aiod_cdfail=$3; fi; ( builtin read -r __aiod_hp __aiod_x </proc/self/stat; builtin printf '\0%s:S:%s:%s\0' "$__aiod_tok" "$__aiod_seq" "${__aiod_hp:-$BASHPID}"; builtin unset -v __aiod_tok __aiod_hp __aiod_x; builtin set --; if [[ -n $__aiod_cdfail ]]; then builtin printf 'bash: cd: %s: cannot change directory\n' "$__aiod_cdfail" >&2; builtin exit 1; fi; builtin trap '{ __aiod_save; } 2>/dev/null' EXIT; IFS= builtin read -r -d '' __aiod_o <"$__aiod_d/opts"; [[ $__aiod_o == "$__aiod_o0" ]] && __aiod_o=; IFS= builtin read -r -d '' __aiod_c <"$__aiod_d/cmd"; builtin shopt -s expand_aliases; builtin eval "{ ${__aiod_o//$'\n'/; } builtin set +m; builtin shopt -s expand_aliases; __aiod_ob=\$SHELLOPTS:\$BASHOPTS; } 2>/dev/null; $__aiod_c"; ) </dev/null 2>&1 & builtin wait "$!" 2>/dev/null; __aiod_rc=$?; }
# aiod shell session prelude, sourced once by the long-lived session shell.
#
# The session shell (the "parent") only keeps state; every command runs in a
# forked subshell (a job, in its own process group thanks to set -m), so an
# `exit` or `exec` in a command ends that subshell, never the session. When
# the subshell exits, its EXIT trap writes its state (variables, functions,
# aliases, working directory, shell options) to files that the parent loads
# back, so `cd`, `export`, assignments and function definitions persist
# across commands as in an ordinary shell.
#
# Parent-side code uses builtins only (prefixed with `builtin`, so a user
# function of the same name cannot shadow them) and names starting with
# __aiod_, which are never saved or restored.
#
# __aiod_run SEQ TOK CWD, on line 1 so that messages about the command read
# "bash: line N: ..." with N counted from the command's first line (this file
# is sourced as "bash"), runs "$__aiod_d/cmd" as a job: the saved options
# are restored on the command's own first line, so even `set -x` shows only
# the command, then the command runs under `eval`.
#
# Wire protocol (see shell.go): the host writes one line per command on the
# parent's stdin; the command text itself is in "$__aiod_d/cmd". Output of
# the job and the markers below go to the parent's stdout/stderr, one pipe:
#   NUL tok ":S:" seq ":" host-pid NUL          first thing the job prints
#   NUL tok ":E:" seq ":" exit-code ":" cwd NUL  after the job was reaped
# tok is a fresh random token per command that the job cannot see. The
# line is "__aiod_run SEQ TOK CWD; builtin eval "$__aiod_L"": bash reads a
# pipe one byte at a time, so what follows the job is in __aiod_L, below.

# The boot line (shell.go) cd'ed to "$__aiod_d" to source this file as
# "bash", with sourcepath off; undo that.
builtin shopt -s sourcepath
builtin cd -- "$__aiod_start"
builtin unset -v OLDPWD
builtin set +o history 2>/dev/null
builtin set -m

# The variables that are never saved, restored or unset (bash's own and
# the prelude's), and the functions, as compgen -X patterns (extglob).
__aiod_nv='@(__aiod_*|BASH|BASH[_A-Z]*|DIRSTACK|EPOCHREALTIME|EPOCHSECONDS|EUID|FUNCNAME|GROUPS|HISTCMD|LINENO|OPTIND|PIPESTATUS|PPID|PWD|RANDOM|SECONDS|SHELLOPTS|SHLVL|SRANDOM|UID|_|COMP_WORDBREAKS)'
__aiod_nf='@(__aiod_*|builtin)'

# __aiod_clear unsets the user's variables, functions and aliases before a
# saved state is loaded, so that an `unset` in a command persists too.
__aiod_clear() {
	builtin shopt -s extglob
	builtin compgen -v -X "$__aiod_nv" >|"$__aiod_d/names"
	builtin mapfile -t __aiod_un <"$__aiod_d/names"
	((${#__aiod_un[@]} == 0)) || builtin unset -v "${__aiod_un[@]}"
	builtin compgen -A function -X "$__aiod_nf" >|"$__aiod_d/names"
	builtin mapfile -t __aiod_un <"$__aiod_d/names"
	((${#__aiod_un[@]} == 0)) || builtin unset -f "${__aiod_un[@]}"
	builtin shopt -u extglob
	builtin unalias -a
}

# __aiod_save runs from the job's EXIT trap (stderr discarded).
# The options are written again only when the command changed them (the
# job noted them as __aiod_ob once restored), and the variables and
# functions are printed with one declare each: a session's command costs
# a few hundred microseconds of bash beside the command itself.
__aiod_save() {
	if [[ $SHELLOPTS:$BASHOPTS != "${__aiod_ob-}" ]]; then
		{
			builtin shopt -p
			builtin set +o
		} >|"$__aiod_d/opts"
	fi
	builtin set +e +u +x +v +o pipefail
	builtin shopt -u nocaseglob nocasematch
	builtin shopt -s extglob
	builtin compgen -v -X "$__aiod_nv" >|"$__aiod_d/vnames"
	builtin mapfile -t __aiod_keep <"$__aiod_d/vnames"
	builtin compgen -A function -X "$__aiod_nf" >|"$__aiod_d/fnames"
	builtin mapfile -t __aiod_kf <"$__aiod_d/fnames"
	builtin declare -F >|"$__aiod_d/fattrs"
	builtin mapfile -t __aiod_fa <"$__aiod_d/fattrs"
	builtin alias -p >|"$__aiod_d/aliases"
	builtin mapfile -t __aiod_al <"$__aiod_d/aliases"
	{
		# The directory first: cd sets OLDPWD, the saved one must win.
		builtin printf 'builtin cd -- %q\n' "$PWD"
		((${#__aiod_keep[@]} == 0)) || builtin declare -p "${__aiod_keep[@]}"
		((${#__aiod_kf[@]} == 0)) || builtin declare -f "${__aiod_kf[@]}"
		for __aiod_n in "${__aiod_fa[@]}"; do
			case $__aiod_n in
			"declare -fx "__aiod_* | "declare -fx builtin") ;;
			"declare -fx "*) builtin printf 'builtin %s\n' "$__aiod_n" ;;
			esac
		done
		for __aiod_n in "${__aiod_al[@]}"; do
			case $__aiod_n in
			"alias "*) builtin printf 'builtin %s\n' "$__aiod_n" ;;
			esac
		done
	} >|"$__aiod_d/st.$((__aiod_seq % 2))"
	builtin printf '%s\n' "$__aiod_seq" >|"$__aiod_d/ok"
}

# __aiod_ok SEQ reports whether the job of SEQ saved its state.
__aiod_ok() {
	builtin read -r __aiod_k <"$__aiod_d/ok"
	[[ $__aiod_k == "$1" ]]
}

# __aiod_end SEQ TOK prints the end marker.
__aiod_end() {
	if [[ -v OLDPWD ]]; then
		__aiod_op=$OLDPWD
		builtin cd -P . 2>/dev/null
		OLDPWD=$__aiod_op
	else
		builtin cd -P . 2>/dev/null
		builtin unset -v OLDPWD
	fi
	builtin printf '\0%s:E:%s:%s:%s\0' "$2" "$1" "$__aiod_rc" "$PWD"
}

# __aiod_L follows every job, at the top level (a function would make the
# state's declarations local): after a job that saved its state, load it
# (__aiod_clear, then source) unless it is the text loaded last
# (__aiod_cur) and the parent did not cd to a cwd given with the command
# (most commands change nothing, and the load was most of a command's
# cost); note it as good (a restarted shell loads it); print the end
# marker.
__aiod_L='if __aiod_ok "$__aiod_seq"; then IFS= builtin read -r -d "" __aiod_new <"$__aiod_d/st.$((__aiod_seq % 2))"; if [[ -n $__aiod_cwd || $__aiod_new != "$__aiod_cur" ]]; then __aiod_clear; builtin source "$__aiod_d/st.$((__aiod_seq % 2))"; __aiod_cur=$__aiod_new; fi; builtin printf "%s\n" "$__aiod_seq" >|"$__aiod_d/good"; fi >/dev/null 2>&1; __aiod_end "$__aiod_seq" "$__aiod_tok"'

# The options a job has when it changed none (this shell's, without
# monitor, with expand_aliases): a job whose saved options are these does
# not restore them. They are the first job's (a restarted shell keeps those
# of the last job). Then the state of an earlier shell of this session, if
# any.
(
	builtin set +m
	builtin shopt -s expand_aliases
	{
		builtin shopt -p
		builtin set +o
	} >|"$__aiod_d/opts0"
) 2>/dev/null
IFS= builtin read -r -d '' __aiod_o0 <"$__aiod_d/opts0"
if [[ ! -e $__aiod_d/opts ]]; then
	builtin printf '%s' "$__aiod_o0" >|"$__aiod_d/opts"
fi 2>/dev/null
if builtin read -r __aiod_g <"$__aiod_d/good"; then
	__aiod_clear
	builtin source "$__aiod_d/st.$((__aiod_g % 2))"
	IFS= builtin read -r -d '' __aiod_cur <"$__aiod_d/st.$((__aiod_g % 2))"
fi >/dev/null 2>&1
