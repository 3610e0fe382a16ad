#!/usr/bin/env bash
# Each floor's sources include only the floors below it (docs/ARCHITECTURE.md, "The floors"):
# prints every quoted include of a floor that the table does not allow, and fails if any.
# The link lines enforce the same for symbols; this catches a header-only upward include.
# emu/ stands in for CUDA, which every floor may include.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
declare -A allowed=(
  [base]="base"
  [kernels]="base kernels"
  [engine]="base kernels engine"
  [comm]="base engine comm"
  [models]="base engine models"
  [data]="base kernels engine data"
  [train]="base kernels engine comm models data train"
  # The benchmarks time the library the trainer is made of, never the executables' insides;
  # of train/ only its public doors (public_train below).
  [bench]="base kernels engine comm models data train bench"
  # Inference reads a checkpoint with what sits below train/: the model registry, the loss,
  # the features. Nothing of the trainer.
  [tools/inference]="base kernels engine comm models data tools"
)
# train/'s public entry points: the loop and the pipeline's builder. A floor that may include
# train/ only through its doors (bench/) includes no other header of it.
public_train="train/train_loop.h train/pipeline/build_pipeline.h"
doors_only="bench"
floors="emu base kernels engine comm models data train tools bench tests"
bad=0
for floor in "${!allowed[@]}"; do
  while IFS= read -r hit; do
    file=${hit%%:*}
    target=$(sed -E 's/.*#[[:space:]]*include[[:space:]]+"([a-z_]+)\/.*/\1/' <<<"$hit")
    case " $floors " in *" $target "*) ;; *) continue ;; esac
    header=$(sed -E 's/.*#[[:space:]]*include[[:space:]]+"([^"]+)".*/\1/' <<<"$hit")
    if [ "$target" = train ] && [[ " $doors_only " == *" $floor "* ]]; then
      case " $public_train " in *" $header "*) continue ;; esac
      echo "${file#"$root"/}: $floor/ may include train/ only through $public_train (${hit#*:})"
      bad=1
      continue
    fi
    case " ${allowed[$floor]} emu " in *" $target "*) continue ;; esac
    echo "${file#"$root"/}: $floor/ may not include $target/ (${hit#*:})"
    bad=1
  done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[a-z_]+/' "$root/$floor" \
             --include='*.h' --include='*.cpp' --include='*.cu' --include='*.cuh' || true)
done
# Rooms of train/ that may not include one another: the pipeline is a training strategy
# (train/pipeline/ includes train/strategy/), so the strategies' room never includes the
# pipeline's; train/setup/strategy_choice.cpp, above both, builds either.
declare -A room_forbids=(
  [train/strategy]="train/pipeline"
)
for room in "${!room_forbids[@]}"; do
  for other in ${room_forbids[$room]}; do
    while IFS= read -r hit; do
      echo "${hit#"$root"/}: $room/ may not include $other/"
      bad=1
    done < <(grep -rnE "^[[:space:]]*#[[:space:]]*include[[:space:]]+\"$other/" "$root/$room" \
               --include='*.h' --include='*.cpp' || true)
  done
done
# A task is told its narrow options (train/tasks/task_options.h), never the whole run's: no
# header of the tasks' room includes TrainerOptions' header (task_options.cpp fills the
# narrow structs from it, make_task.cpp hands them over).
run_options_header="train/trainer_options.h"
while IFS= read -r hit; do
  echo "${hit#"$root"/}: a task's header may not include $run_options_header (give the task its narrow options, train/tasks/task_options.h)"
  bad=1
done < <(grep -rnE "^[[:space:]]*#[[:space:]]*include[[:space:]]+\"$run_options_header\"" \
           "$root/train/tasks" --include='*.h' || true)
# A mode is read into its enum once, in the option table (train/option_modes.h, Choice), and
# compared as an enum everywhere else: no word of an option compared to a quoted string where
# the trainer's options are used (train/, the trainer command, the inference tools reading
# a checkpoint's saved options), outside the option table's own files. What counts as
# comparing an option: `o.x == "..."`, `options_.x != "..."` (either side), a Choice's
# `.word() == "..."`, and a saved option read and compared, `checkpoint.option("x") == "..."`
# or `saved.value("x", ...) == "..."`. The benchmarks, probe and featurize have flags of
# their own, not the table's.
mode_compare_scope="train tools/trainer tools/inference"
option_table_files='^train/(option_[a-z_]+|trainer_options|config_file)\.(h|cpp)$'
options_object='\b(o|o_|options|options_)\.[a-z_]+(\(\))?'
is_string='[[:space:]]*[!=]=[[:space:]]*"'
mode_compare="${options_object}${is_string}|\"[[:space:]]*[!=]=[[:space:]]*${options_object}"
mode_compare+="|\.word\(\)${is_string}|\.(option|value)\(\"[^\"]*\".*\)${is_string}"
for place in $mode_compare_scope; do
  while IFS= read -r hit; do
    where=${hit#"$root"/}
    where=${where%:"${hit#*:*:}"}
    [[ "${where%%:*}" =~ $option_table_files ]] && continue
    echo "$where: an option's word compared outside the option table (read it there, into an enum of train/option_modes.h or a TrainerOptions accessor): ${hit#*:*:}"
    bad=1
  done < <(grep -rnE "$mode_compare" "$root/$place" --include='*.h' --include='*.cpp' || true)
done
[ "$bad" = 0 ] && echo "every floor includes only the floors below it; no option's word is compared outside the option table"
exit "$bad"
