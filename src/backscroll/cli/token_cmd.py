"""``backscroll token``: create, list and revoke the tokens of ``backscroll serve``.

A token is scoped to one workspace, a set of sessions of one workspace, or (operators) several
workspaces. Its secret is printed once at creation; the file keeps only its hash.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from backscroll.cli import output

if TYPE_CHECKING:
    from backscroll.service.tokens import TokenStore

__all__ = ["register"]

token_app = typer.Typer(
    add_completion=False, no_args_is_help=True, rich_markup_mode=None, help="Tokens of `backscroll serve`."
)


def _store(as_json: bool = False) -> TokenStore:
    from pydantic import ValidationError

    from backscroll.service.settings import ServeSettings, describe_settings_error
    from backscroll.service.tokens import TokenStore as Store

    try:
        return Store(ServeSettings().tokens_file)
    except ValidationError as err:
        message = describe_settings_error(err)
        output.fail(message, output.EXIT_USAGE, as_json=as_json, code="BACKSCROLL_INVALID_SETTING")


@token_app.command("create")
def create(
    workspace: Annotated[
        str | None, typer.Option("--workspace", "-w", metavar="WORKSPACE", help="The token's workspace.")
    ] = None,
    session: Annotated[
        list[str] | None,
        typer.Option(
            "--session", "-s", metavar="SESSION", help="Only these sessions of --workspace (repeatable)."
        ),
    ] = None,
    workspaces: Annotated[
        str | None,
        typer.Option("--workspaces", metavar="W1,W2", help="Several workspaces (an operator's token)."),
    ] = None,
    expires: Annotated[
        str | None,
        typer.Option("--expires", metavar="WHEN", help="30d, 12h, 45m, 2w or an ISO date (never: unset)."),
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", metavar="NAME", help="A label for `token list`.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the token (and its secret) as JSON.")
    ] = False,
) -> None:
    """Create a token and print its secret (shown only this once)."""
    from backscroll.service.tokens import TokenError, parse_expires

    chosen = [workspace] if workspace else []
    chosen += [w.strip() for w in (workspaces or "").split(",") if w.strip()]
    try:
        store = _store(as_json)
        token, secret = store.create(chosen, sessions=session, expires=parse_expires(expires), name=name)
    except TokenError as err:
        output.fail(str(err), output.EXIT_USAGE, as_json=as_json)
    if as_json:
        output.print_json({**token.to_json(), "token": secret})
        return
    output.say(f"token {token.id} for {token.describe_scope()}; keep the secret, it is not shown again:")
    output.say(secret)


@token_app.command("list")
def list_tokens(
    as_json: Annotated[bool, typer.Option("--json", help="Print the tokens as JSON.")] = False,
) -> None:
    """List the tokens (never their secrets)."""
    from backscroll.service.tokens import TokenError

    store = _store(as_json)
    try:
        tokens = store.tokens()
    except TokenError as err:
        output.fail(str(err), output.EXIT_FAILED, as_json=as_json)
    if as_json:
        output.print_json([token.to_json() for token in tokens])
        return
    for token in tokens:
        state = "revoked" if token.revoked else ("active" if token.active() else "expired")
        expires = token.expires.isoformat() if token.expires else "never"
        label = f" {token.name}" if token.name else ""
        output.say(f"{token.id}{label}  {token.describe_scope()}  {state}  expires {expires}")


@token_app.command("revoke")
def revoke(
    token_id: Annotated[str, typer.Argument(metavar="ID", help="The token's id (token list).")],
) -> None:
    """Revoke a token; a running `backscroll serve` refuses it from its next request."""
    from backscroll.service.tokens import TokenError

    store = _store()
    try:
        token = store.revoke(token_id)
    except TokenError as err:
        output.fail(str(err), output.EXIT_FAILED)
    output.say(f"token {token.id} revoked")


def register(app: typer.Typer) -> None:
    """Add ``backscroll token`` to the ``backscroll`` app."""
    app.add_typer(token_app, name="token")
