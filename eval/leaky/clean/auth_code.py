"""Code that handles secrets without containing any: every line must survive redaction untouched."""
import getpass
import os
from dataclasses import dataclass

from django.conf import settings


@dataclass
class Credentials:
    username: str
    secret_key: str
    api_key: str | None = None
    password_hash: bytes = b""


def login(user: str) -> Credentials:
    password = getpass.getpass("Password: ")
    token = os.environ["TOKEN"]
    api_key=settings.API_KEY
    secret = os.getenv("APP_SECRET", "")
    auth_token = request.headers.get("X-Auth-Token")
    headers = {"Authorization": f"Bearer {token}", "X-Api-Key": api_key}
    client_secret = config["oauth"]["client_secret"]
    access_key = self.session.get_credentials().access_key
    private_key = load_pem_private_key(data, password=None)
    password = getpass()
    if password == confirm_password:
        return Credentials(user, secret_key=secret, api_key=api_key)
    raise ValueError("password mismatch")


const apiKey = process.env.OPENAI_API_KEY;
const token = await getToken({ req, secret: process.env.NEXTAUTH_SECRET });
let password = prompt("password");
