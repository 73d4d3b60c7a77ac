"""Token formats the secret guard knows beyond detect-secrets: data, not code.

detect-secrets (Yelp) covers about twenty vendors. gitleaks' default rule set
(``config/gitleaks.toml``, gitleaks/gitleaks) is larger and maintained; the
rules below are the ones of it that have a fixed prefix of their own, for
services an agent's work touches (clouds, CI, package registries, monitoring,
payments, chat webhooks), so that a token is found wherever it stands and
ordinary text never matches. gitleaks' rules that need a service's name next
to a 32-character value (``twitter ... = <value>``) are left to the guard's
``name = value`` and key-word rules, which already take such values.

Three are not in gitleaks' default set: Discord webhooks and Google OAuth
client secrets (``GOCSPX-``) and access tokens (``ya29.``), which are as
recognisable and as common in an agent's tool output.

Each entry: (kind, pattern, needles). The kind is what a refusal or a
redaction names; a needle (lower case) is a piece the text must hold for the
pattern to run at all (see ``secret_guard._Gate``).
"""

from __future__ import annotations

__all__ = ["PREFIX_RULES"]

_END = r"(?![\w-])"  # a token ends where a word does

PREFIX_RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # Clouds and infrastructure.
    (
        "DigitalOcean token",
        rf"\bdo[opr]_v1_[a-f0-9]{{64}}{_END}",
        ("doo_v1_", "dop_v1_", "dor_v1_"),
    ),
    ("Alibaba Cloud key", rf"\bLTAI[A-Za-z0-9]{{20}}{_END}", ("ltai",)),
    (
        "Azure AD client secret",
        r"(?<![\w~.])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![\w~.-])",
        ("q~",),
    ),
    ("Google OAuth client secret", rf"\bGOCSPX-[A-Za-z0-9_-]{{28}}{_END}", ("gocspx-",)),
    ("Google OAuth token", rf"\bya29\.[A-Za-z0-9_-]{{30,}}{_END}", ("ya29.",)),
    ("HashiCorp Vault token", rf"\bhv[sb]\.[A-Za-z0-9_-]{{90,300}}{_END}", ("hvs.", "hvb.")),
    ("Terraform Cloud token", r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}\b", ("atlasv1",)),
    (
        "Fly.io token",
        r"\b(?:fo1_[\w-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3})",
        ("fo1_", "fm1", "fm2_"),
    ),
    ("Doppler token", rf"\bdp\.pt\.[A-Za-z0-9]{{43}}{_END}", ("dp.pt.",)),
    ("PlanetScale token", rf"\bpscale_(?:tkn|pw|oauth)_[\w=.-]{{32,64}}{_END}", ("pscale_",)),
    ("Pulumi token", rf"\bpul-[a-f0-9]{{40}}{_END}", ("pul-",)),
    ("Databricks token", rf"\bdapi[a-f0-9]{{32}}(?:-\d)?{_END}", ("dapi",)),
    ("OpenShift token", rf"\bsha256~[\w-]{{43}}{_END}", ("sha256~",)),
    (
        "age secret key",
        r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b",
        ("age-secret-key-1",),
    ),
    ("1Password token", r"\bops_eyJ[A-Za-z0-9+/]{250,}={0,3}", ("ops_",)),
    # Code hosting, CI and package registries.
    ("Atlassian token", rf"\bATATT3[A-Za-z0-9_=-]{{186}}{_END}", ("atatt3",)),
    ("Linear key", rf"\blin_api_[A-Za-z0-9]{{40}}{_END}", ("lin_api_",)),
    ("Postman key", rf"\bPMAK-[a-f0-9]{{24}}-[a-f0-9]{{34}}{_END}", ("pmak-",)),
    ("Prefect key", rf"\bpnu_[A-Za-z0-9]{{36}}{_END}", ("pnu_",)),
    ("RubyGems key", rf"\brubygems_[a-f0-9]{{48}}{_END}", ("rubygems_",)),
    ("ReadMe key", rf"\brdme_[a-z0-9]{{70}}{_END}", ("rdme_",)),
    ("HuggingFace token", rf"\bapi_org_[A-Za-z]{{34}}{_END}", ("api_org_",)),
    (
        "Grafana token",
        r"\b(?:glc_[A-Za-z0-9+/]{32,400}={0,3}"
        rf"|glsa_[A-Za-z0-9]{{32}}_[a-fA-F0-9]{{8}}){_END}",
        ("glc_", "glsa_"),
    ),
    (
        "Sentry token",
        r"\b(?:sntryu_[a-f0-9]{64}"
        rf"|sntrys_eyJ[A-Za-z0-9+/=_]{{40,}}){_END}",
        ("sntryu_", "sntrys_"),
    ),
    ("New Relic key", rf"\bNRAK-[A-Z0-9]{{27}}{_END}", ("nrak-",)),
    ("Dynatrace token", rf"\bdt0c01\.[A-Za-z0-9]{{24}}\.[A-Za-z0-9]{{64}}{_END}", ("dt0c01.",)),
    # Payments, commerce and mail.
    (
        "Shopify token",
        rf"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{{32}}{_END}",
        ("shpat_", "shpca_", "shppa_", "shpss_"),
    ),
    ("Square token", rf"\b(?:EAAA|sq0atp-)[\w-]{{22,60}}{_END}", ("eaaa", "sq0atp-")),
    ("Stripe key", rf"\b(?:sk|rk)_prod_[A-Za-z0-9]{{10,99}}{_END}", ("k_prod_",)),
    ("EasyPost key", rf"\bEZ[AT]K[A-Za-z0-9]{{54}}{_END}", ("ezak", "eztk")),
    ("Sendinblue key", rf"\bxkeysib-[a-f0-9]{{64}}-[A-Za-z0-9]{{16}}{_END}", ("xkeysib-",)),
    ("Facebook token", rf"\bEAA[MC][A-Za-z0-9]{{100,}}{_END}", ("eaam", "eaac")),
    # Chat and webhooks: the URL is the credential.
    ("Slack token", r"\bxapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+\b", ("xapp-",)),
    (
        "Discord webhook",
        r"https?://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\d{5,30}/[\w-]{30,}",
        ("discord.com/api/webhooks", "discordapp.com/api/webhooks"),
    ),
    (
        "Microsoft Teams webhook",
        r"https://[a-z0-9-]+\.webhook\.office\.com/webhookb2/[a-z0-9-]{36}@[a-z0-9-]{36}"
        r"/IncomingWebhook/[a-z0-9]{32}/[a-z0-9-]{36}",
        ("webhook.office.com",),
    ),
)
