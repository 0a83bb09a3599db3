# bash completion for dscc, dscc-opt, dscc-tune and dscc-run: options are read from each tool's own --help.
_dscc_options() {
  # The long and short options a --help text lists (CLI11: "  -o,--output TEXT  ...").
  "$@" --help 2>/dev/null | sed -n 's/^ *\(-[^ ]*\).*/\1/p' | tr ',' '\n' | sed 's/^--M\([DFTP]\|MD\)$/-M\1/'
}

_dscc() {
  local cur prev cmd sub i
  COMPREPLY=()
  cur="${COMP_WORDS[COMP_CWORD]}"
  prev="${COMP_WORDS[COMP_CWORD-1]}"
  cmd="${COMP_WORDS[0]}"
  sub=""
  if [[ "$(basename "$cmd")" == dscc ]]; then
    for ((i = 1; i < COMP_CWORD; i++)); do
      case "${COMP_WORDS[i]}" in
        compile|run|explain|view|import|ops) sub="${COMP_WORDS[i]}"; break ;;
      esac
    done
    if [[ -z "$sub" && "$cur" != -* ]]; then
      COMPREPLY=($(compgen -W "compile run explain view import ops --help --version" -- "$cur"))
      return 0
    fi
  fi
  case "$prev" in
    -o|--output|-MF|--MF|--tuning|--shapes|-i|--input|--const|--runtime-dir|--output-dir|--config|--profile|--trace|--profile-out)
      COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
    --cache-dir) COMPREPLY=($(compgen -d -- "$cur")); return 0 ;;
    --progress) COMPREPLY=($(compgen -W "auto always never" -- "$cur")); return 0 ;;
    --emit) COMPREPLY=($(compgen -W "so obj header ir fused-ir llvm asm ptx" -- "$cur")); return 0 ;;
    --target) COMPREPLY=($(compgen -W "cpu cuda:sm_80 cuda:sm_90" -- "$cur")); return 0 ;;
    --mcpu) COMPREPLY=($(compgen -W "native x86-64 x86-64-v2 x86-64-v3 x86-64-v4" -- "$cur")); return 0 ;;
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$(_dscc_options "$cmd" $sub) -O0 -O1 -O2 -O3 -Os -g" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -X '!*.@(dsc|onnx|so|yaml)' -- "$cur") $(compgen -d -- "$cur"))
  fi
  return 0
}
complete -F _dscc dscc dscc-opt dscc-tune dscc-run
