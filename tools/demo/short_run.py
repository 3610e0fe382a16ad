#!/usr/bin/env python3
"""The trainer options a demo adds for a run shorter than its recipe's.

Usage: tools/demo/short_run.py RECIPE.yaml [TRAINER OPTIONS...]

Given --epochs N (or --epochs=N) and no --warmup of its own, prints "--warmup W": the
recipe's warmup scaled to N epochs as the recipe scales it to its own epochs, so that
`tools/demo.sh genre --epochs 2` warms up for 2/30 of 2 epochs instead of refusing a warmup
of 2 epochs out of 2. Prints nothing otherwise. Reads the recipe's top-level `warmup:` and
`epochs:` lines (the recipes are flat YAML).
"""
import sys


def option_value(arguments, name):
    """The value of --name V or --name=V (the last one given), else None."""
    value = None
    for i, argument in enumerate(arguments):
        if argument == name and i + 1 < len(arguments):
            value = arguments[i + 1]
        elif argument.startswith(name + "="):
            value = argument[len(name) + 1:]
    return value


def recipe_values(path):
    values = {}
    with open(path, encoding="utf-8") as recipe:
        for line in recipe:
            line = line.split("#", 1)[0]
            if ":" in line and not line.startswith((" ", "\t")):
                key, value = line.split(":", 1)
                values[key.strip()] = value.strip()
    return values


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: tools/demo/short_run.py RECIPE.yaml [TRAINER OPTIONS...]")
    recipe, arguments = sys.argv[1], sys.argv[2:]
    epochs = option_value(arguments, "--epochs")
    if epochs is None or option_value(arguments, "--warmup") is not None:
        return
    values = recipe_values(recipe)
    try:
        warmup = float(values.get("warmup", "0"))
        recipe_epochs = float(values["epochs"])
        wanted = float(epochs)
    except (KeyError, ValueError):
        return  # the trainer says what is wrong with the options
    if warmup <= 0 or recipe_epochs <= 0 or wanted <= 0 or wanted >= recipe_epochs:
        return
    print(f"--warmup {warmup * wanted / recipe_epochs:.3g}")


if __name__ == "__main__":
    main()
