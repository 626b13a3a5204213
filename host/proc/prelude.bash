__aiod_run() { __aiod_k=$1; builtin unset -v __aiod_p; IFS= builtin read -r -N 1 -u "${__aiod_g[__aiod_k % 2]}" __aiod_h && IFS= builtin read -r -N 56 __aiod_h || { builtin printf x >|"$__aiod_d/eof"; builtin exit 0; }; { builtin printf '\0%s:S:%s:%s\0' "${__aiod_h:0:32}" "${__aiod_h:33:20}" "$BASHPID"; builtin set --; if [[ ${__aiod_h:54:1} == c ]]; then IFS= builtin read -r -d '' __aiod_cwd <"$__aiod_d/cwd"; if builtin cd -- "$__aiod_cwd" 2>/dev/null; then builtin printf '%s\n%s' "$__aiod_k" "$__aiod_cwd" >|"$__aiod_d/pcwd"; else builtin printf 'bash: cd: %s: cannot change directory\n' "$__aiod_cwd" >&2; builtin exit 1; fi; fi; builtin trap "{ __aiod_save ${__aiod_h:0:32} ${__aiod_h:33:20}; } 2>/dev/null" EXIT; builtin unset -v __aiod_h __aiod_cwd; IFS= builtin read -r -d '' __aiod_c <"$__aiod_d/cmd"; builtin shopt -s expand_aliases; if [[ -n $__aiod_o ]]; then builtin eval "{ $__aiod_o builtin set +m; builtin shopt -s expand_aliases; __aiod_ob=\$SHELLOPTS:\$BASHOPTS; } 2>/dev/null; $__aiod_c"; else builtin set +m; __aiod_ob=$SHELLOPTS:$BASHOPTS; builtin eval "$__aiod_c"; fi; } </dev/null {__aiod_g0}>&- {__aiod_g1}>&-; }
# aiod shell session prelude, sourced once by the long-lived session shell.
#
# The session shell (the "parent") only keeps state; every command runs in a
# forked subshell (a job, in its own process group thanks to set -m), so an
# `exit` or `exec` in a command ends that subshell, never the session. When
# the command ends, the job's EXIT trap reports its exit code and directory,
# then writes its state (variables, functions, aliases, working directory,
# shell options) to files that the parent loads back, so `cd`, `export`,
# assignments and function definitions persist across commands as in an
# ordinary shell.
#
# Parent-side code uses builtins only (prefixed with `builtin`, so a user
# function of the same name cannot shadow them) and names starting with
# __aiod_, which are never saved or restored.
#
# The parent loops (the boot line in shell.go): fork the job after the one
# it waits for, wait, handle what the job saved (__aiod_L). So a job is
# forked before its command arrives and the fork is not part of a command's
# time. A job waits on its gate (the FIFO gate.0 or gate.1 by the parity of
# its number __aiod_k, made by the host), then for its header on stdin, the
# pipe from the host. Job k+1 is released by job k itself when k saved a
# state equal to the parent's (the common case), else by the parent after
# it loaded the state and forked a fresh job k+1 in place of the waiting
# one.
#
# __aiod_run, on line 1 so that messages about the command read "bash: line
# N: ..." with N counted from the command's first line (this file is sourced
# as "bash"), is the job: read the header, print the start marker, move to
# the given cwd, set the EXIT trap, then run "$__aiod_d/cmd" under eval; the
# options that differ from a job's defaults (__aiod_o, usually none) are
# restored on the command's own first line, so even `set -x` shows only the
# command.
#
# Wire protocol (see shell.go). The host writes the command to
# "$__aiod_d/cmd" (and a cwd to "$__aiod_d/cwd"), then a header of 56 bytes
# on stdin, read in one read(2) with read -N (bash reads a line from a pipe
# one byte at a time):
#   tok(32 hex) " " seq(20 digits) " " flag ("c": a cwd was given, else "-") "\n"
# Output of the job (stdout and stderr) and the markers go to the parent's
# stdout, one pipe; the job's end marker to fd 253, a copy of it the command
# is unlikely to close or move:
#   NUL tok ":S:" seq ":" pid NUL               first thing the job prints
#                                                (its $BASHPID: the host maps
#                                                a PID namespace's pids)
#   NUL tok ":E:" seq ":" exit-code ":" cwd NUL  the job's EXIT trap, before
#                                                it saves the state
#   NUL ptok ":X:" exit-code ":" cwd NUL        the parent, after a job that
#                                                saved nothing (exec, a
#                                                signal, its own EXIT trap)
# tok is a fresh random token per command; the command could read it from
# its EXIT trap (trap -p), never from a variable. ptok is the parent's,
# for the life of the shell, unset in every job. The host takes an X only
# after the S of its command and before an E.

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

# __aiod_diff LIST DEFAULTS ON OFF appends to __aiod_o the commands that turn
# the options of the colon list LIST on (ON NAME) or off (OFF NAME) where it
# differs from DEFAULTS.
__aiod_diff() {
	__aiod_l=$2:
	while [[ -n $__aiod_l ]]; do
		__aiod_n=${__aiod_l%%:*} __aiod_l=${__aiod_l#*:}
		[[ -z $__aiod_n || :$1: == *:"$__aiod_n":* ]] || __aiod_o+="builtin $4 $__aiod_n; "
	done
	__aiod_l=$1:
	while [[ -n $__aiod_l ]]; do
		__aiod_n=${__aiod_l%%:*} __aiod_l=${__aiod_l#*:}
		[[ -z $__aiod_n || :$2: == *:"$__aiod_n":* ]] || __aiod_o+="builtin $3 $__aiod_n; "
	done
}

# __aiod_save TOK SEQ runs from the job's EXIT trap (stderr discarded): the
# end marker first (the host answers while the state is written), then the
# state, then "ok": the job's number, "n" if the state differs from the one
# the parent holds (__aiod_cur), else "s", and "o" if the options changed.
# The state goes to the slot that is not the last good one, so a job killed
# while writing never spoils what a restarted shell loads. Variables and
# functions are printed with one declare each; aliases as alias -p prints
# them, before the functions (the parent has just unset those, so nothing
# shadows alias or declare).
__aiod_save() {
	__aiod_rc=$? __aiod_so=$SHELLOPTS __aiod_bo=$BASHOPTS
	builtin set +e +u +x +v +o pipefail
	builtin shopt -u nocaseglob nocasematch
	if [[ -v OLDPWD ]]; then
		__aiod_op=$OLDPWD
		builtin cd -P . 2>/dev/null
		OLDPWD=$__aiod_op
	else
		builtin cd -P . 2>/dev/null
		builtin unset -v OLDPWD
	fi
	# To the shell's stdout as it was (the command may have closed or
	# moved its own); if even that fails, the parent reports the end.
	builtin printf '\0%s:E:%s:%s:%s\0' "$1" "$2" "$__aiod_rc" "$PWD" >&"$__aiod_eo" || builtin return
	__aiod_f=
	if [[ $__aiod_so:$__aiod_bo != "${__aiod_ob-}" ]]; then
		__aiod_o=
		__aiod_diff "$__aiod_so" "$__aiod_so0" "set -o" "set +o"
		__aiod_diff "$__aiod_bo" "$__aiod_bo0" "shopt -s" "shopt -u"
		builtin printf '%s' "$__aiod_o" >|"$__aiod_d/opts"
		__aiod_f=o
	fi
	builtin shopt -s extglob
	builtin compgen -v -X "$__aiod_nv" >|"$__aiod_d/vnames"
	builtin mapfile -t __aiod_keep <"$__aiod_d/vnames"
	builtin compgen -A function -X "$__aiod_nf" >|"$__aiod_d/fnames"
	builtin mapfile -t __aiod_kf <"$__aiod_d/fnames"
	__aiod_st=$__aiod_d/st.$((1 - __aiod_gs))
	{
		# The directory first: cd sets OLDPWD, the saved one must win.
		builtin printf 'builtin cd -- %q\n' "$PWD"
		builtin alias -p
		((${#__aiod_keep[@]} == 0)) || builtin declare -p "${__aiod_keep[@]}"
		if ((${#__aiod_kf[@]} > 0)); then
			builtin declare -f "${__aiod_kf[@]}"
			builtin declare -F -x >|"$__aiod_d/fattrs"
			builtin mapfile -t __aiod_fa <"$__aiod_d/fattrs"
			((${#__aiod_fa[@]} == 0)) || builtin printf 'builtin %s\n' "${__aiod_fa[@]}"
		fi
	} >|"$__aiod_st"
	IFS= builtin read -r -d '' __aiod_new <"$__aiod_st"
	__aiod_ok=$__aiod_d/ok.$((__aiod_k % 2))
	if [[ $__aiod_new != "$__aiod_cur" ]]; then
		builtin printf '%s n%s\n' "$__aiod_k" "$__aiod_f" >|"$__aiod_ok"
	elif [[ -n $__aiod_f || " ${FUNCNAME[*]} " == *" __aiod_run "* ]]; then
		builtin printf '%s s%s\n' "$__aiod_k" "$__aiod_f" >|"$__aiod_ok"
	else
		# Nothing changed and the job ended normally (not by an exit
		# within its command, where the gates are closed): the next job,
		# forked from the parent as it is, may take the next command at
		# once.
		builtin printf '%s sg\n' "$__aiod_k" >|"$__aiod_ok"
		builtin printf g >&"${__aiod_g[(__aiod_k + 1) % 2]}"
	fi
}

# __aiod_x runs in the parent after a job that saved nothing: it moves to
# the cwd that job was given (the host asked for it, whatever the command
# did), ends the shell if the host closed its stdin, empties the job's
# gate, and prints the parent's end marker.
__aiod_x() {
	if [[ -s $__aiod_d/eof ]]; then
		builtin kill -KILL "$__aiod_sj"
		builtin exit 0
	fi
	__aiod_a= __aiod_b=
	{
		IFS= builtin read -r __aiod_a
		IFS= builtin read -r -d '' __aiod_b
	} <"$__aiod_d/pcwd"
	if [[ $__aiod_a == "$__aiod_k" ]]; then
		builtin cd -- "$__aiod_b"
		__aiod_re=1
	fi
	# A job killed while it waited (by a command) left its release in its
	# gate: take it out, or it would release the job after next too early.
	if IFS= builtin read -r -t 0 -u "${__aiod_g[__aiod_k % 2]}"; then
		IFS= builtin read -r -N 1 -u "${__aiod_g[__aiod_k % 2]}" __aiod_a
	fi
	if [[ -v OLDPWD ]]; then
		__aiod_op=$OLDPWD
		builtin cd -P .
		OLDPWD=$__aiod_op
	else
		builtin cd -P .
		builtin unset -v OLDPWD
	fi
	builtin printf '\0%s:X:%s:%s\0' "$__aiod_p" "$__aiod_rc" "$PWD"
} 2>/dev/null

# __aiod_L follows each job in the parent's loop (the boot line in
# shell.go: `((++__aiod_k)); __aiod_run 2>&1 & builtin wait "$!"; ...`, at
# the top level, so that the command's eval is its only level of `set -x`
# indirection), evaluated at the top level (a function would make the
# state's declarations local): after a job that saved its state, take its options if they changed and load its
# state if it differs from the one held (__aiod_clear, then source), noting
# its slot as good (a restarted shell loads it); else __aiod_x.
__aiod_L='__aiod_a= __aiod_re= __aiod_go=1; { IFS= builtin read -r __aiod_a <"$__aiod_d/ok.$((__aiod_k % 2))"; } 2>/dev/null; if [[ ${__aiod_a%% *} == "$__aiod_k" ]]; then __aiod_a=${__aiod_a#* }; if [[ $__aiod_a == *g ]]; then __aiod_go=; fi; if [[ $__aiod_a == *o* ]]; then IFS= builtin read -r -d "" __aiod_o <"$__aiod_d/opts"; __aiod_re=1; fi 2>/dev/null; if [[ $__aiod_a == n* ]]; then __aiod_gs=$((1 - __aiod_gs)); __aiod_clear; builtin source "$__aiod_d/st.$__aiod_gs"; IFS= builtin read -r -d "" __aiod_cur <"$__aiod_d/st.$__aiod_gs"; builtin printf "%s\n" "$__aiod_gs" >|"$__aiod_d/good"; __aiod_re=1; fi >/dev/null 2>&1; else __aiod_x; fi'

# The options of a job that changed none (this shell's, without monitor,
# with expand_aliases): __aiod_o restores the difference from them. Then
# the state and options of an earlier shell of this session, if any.
(
	builtin set +m
	builtin shopt -s expand_aliases
	builtin printf '%s\n%s\n' "$SHELLOPTS" "$BASHOPTS" >|"$__aiod_d/opts0"
) 2>/dev/null
{
	IFS= builtin read -r __aiod_so0
	IFS= builtin read -r __aiod_bo0
} <"$__aiod_d/opts0"
__aiod_k=1 __aiod_gs=0 __aiod_o= __aiod_cur=
exec {__aiod_g0}<>"$__aiod_d/gate.0" {__aiod_g1}<>"$__aiod_d/gate.1"
# The jobs' end markers go to a copy of stdout at a descriptor a script is
# unlikely to use. (`exec`, not `builtin exec`: redirections on `builtin
# exec` last only for that command; no function can be named exec yet.)
__aiod_eo=253
exec 253>&1 || exec {__aiod_eo}>&1
# The shell's own messages (such as a waiting job a command killed being
# reported "Killed") would land in the current command's output; jobs get
# stdout as their stderr (2>&1 in the loop).
exec 2>/dev/null
__aiod_g=("$__aiod_g0" "$__aiod_g1")
builtin printf '' >|"$__aiod_d/ok.0"
builtin printf '' >|"$__aiod_d/ok.1"
builtin printf '' >|"$__aiod_d/pcwd"
builtin printf '' >|"$__aiod_d/eof"
if [[ -e $__aiod_d/opts ]]; then
	IFS= builtin read -r -d '' __aiod_o <"$__aiod_d/opts"
fi 2>/dev/null
if IFS= builtin read -r __aiod_gs <"$__aiod_d/good"; then
	__aiod_clear
	builtin source "$__aiod_d/st.$__aiod_gs"
	IFS= builtin read -r -d '' __aiod_cur <"$__aiod_d/st.$__aiod_gs"
fi >/dev/null 2>&1
