"""A second labelled set for bench/supersede.py and bench/supersede_more.py (issue #32, item 4).

Written for the update-noticing work, after looking only at the issue's one
example: how people say that a fact *changed* ("… now", "moved to",
"switched to", "no longer", a new day, time, number or name), across work,
home, health, travel and software; and distinct facts that read alike
(another subject, another object of a relation that holds many, events that
add up, a negation of something else). Labelled by meaning.
"""

# ruff: noqa: E501
# fmt: off

from __future__ import annotations

from supersede_pairs import DISTINCT, UPDATE, Pair

MORE_UPDATES: list[Pair] = [
    ("The deploy window is Monday 09:00.", "The deploy window is Tuesday 09:00 now.", UPDATE),
    ("The standup is at 10am.", "The standup moved to 11am.", UPDATE),
    ("The team tracks bugs in Jira.", "The team switched to Linear.", UPDATE),
    ("The user drinks coffee every morning.", "The user no longer drinks coffee every morning.", UPDATE),
    ("The user lives in Lisbon.", "The user moved to Porto.", UPDATE),
    ("The gym closes at 22:00.", "The gym closes at 21:00 now.", UPDATE),
    ("The rent is 1,200 euros a month.", "The rent is 1,350 euros a month now.", UPDATE),
    ("The on-call rotation is weekly.", "The on-call rotation is biweekly now.", UPDATE),
    ("The build runs on Jenkins.", "The build moved to GitHub Actions.", UPDATE),
    ("The user works from home on Fridays.", "The user no longer works from home on Fridays.", UPDATE),
    ("The dentist appointment is on March 3.", "The dentist appointment moved to March 10.", UPDATE),
    ("The API rate limit is 100 requests per minute.", "The API rate limit is currently 300 requests per minute.", UPDATE),
    ("The user's manager is Priya.", "The user's manager is Tom now.", UPDATE),
    ("The book club meets on Wednesdays.", "The book club meets on Thursdays these days.", UPDATE),
    ("The database runs on a single node.", "The database runs on three nodes now.", UPDATE),
    ("The user takes 20 mg of the medication daily.", "The user takes 10 mg of the medication daily now.", UPDATE),
    ("The team's editor of choice is Vim.", "The team's editor of choice switched to Neovim.", UPDATE),
    ("The newsletter goes out on the first of the month.", "The newsletter goes out on the fifteenth of the month now.", UPDATE),
    ("The kids' school starts at 8:15.", "The kids' school starts at 8:30 now.", UPDATE),
    ("The user is training for a half marathon.", "The user is no longer training for a half marathon.", UPDATE),
    ("The cache TTL is 60 seconds.", "The cache TTL was raised to 300 seconds.", UPDATE),
    ("The support hotline is open until 6pm.", "The support hotline is open until 8pm now.", UPDATE),
    ("The user's flight leaves at 07:40.", "The user's flight was rescheduled to 09:10.", UPDATE),
    ("The logo is blue.", "The logo is green now.", UPDATE),
    ("The user's car is a Golf.", "The user's car is a Tesla now.", UPDATE),
    ("The retro happens every Friday.", "The retro happens every other Friday now.", UPDATE),
    ("The monthly budget for groceries is 400 euros.", "The monthly budget for groceries was cut to 350 euros.", UPDATE),
    ("The user's phone is an iPhone 12.", "The user's phone is currently a Pixel 8.", UPDATE),
    ("The main branch is called master.", "The main branch was renamed to main.", UPDATE),
    ("The user goes swimming on Sundays.", "The user goes swimming on Saturdays now.", UPDATE),
    ("The parking permit costs 30 euros.", "The parking permit costs 45 euros now.", UPDATE),
    ("The office is on the third floor.", "The office moved to the fifth floor.", UPDATE),
]

MORE_DISTINCTS: list[Pair] = [
    ("The deploy window is Monday 09:00.", "The maintenance window is Sunday 02:00.", DISTINCT),
    ("The standup is at 10am.", "The planning meeting is at 2pm.", DISTINCT),
    ("The team tracks bugs in Jira.", "The team tracks time in Harvest.", DISTINCT),
    ("The user drinks coffee every morning.", "The user drinks tea every evening.", DISTINCT),
    ("The user lives in Lisbon.", "The user's sister lives in Porto.", DISTINCT),
    ("The gym closes at 22:00.", "The pool closes at 20:00.", DISTINCT),
    ("The rent is 1,200 euros a month.", "The electricity bill is 90 euros a month.", DISTINCT),
    ("The on-call rotation is weekly.", "The code freeze is quarterly.", DISTINCT),
    ("The build runs on Jenkins.", "The nightly tests run on Buildkite.", DISTINCT),
    ("The user works from home on Fridays.", "The user works from the office on Tuesdays.", DISTINCT),
    ("The dentist appointment is on March 3.", "The eye exam is on March 10.", DISTINCT),
    ("The API rate limit is 100 requests per minute.", "The upload size limit is 10 MB per file.", DISTINCT),
    ("The user's manager is Priya.", "The user's mentor is Tom.", DISTINCT),
    ("The book club meets on Wednesdays.", "The chess club meets on Thursdays.", DISTINCT),
    ("The database runs on a single node.", "The search cluster runs on three nodes.", DISTINCT),
    ("The user takes 20 mg of the medication daily.", "The user takes vitamin D every morning.", DISTINCT),
    ("The team's editor of choice is Vim.", "The team's terminal of choice is iTerm.", DISTINCT),
    ("The newsletter goes out on the first of the month.", "The invoices go out on the fifteenth of the month.", DISTINCT),
    ("The kids' school starts at 8:15.", "The kids' football practice starts at 17:00.", DISTINCT),
    ("The user is training for a half marathon.", "The user is training a new puppy.", DISTINCT),
    ("The cache TTL is 60 seconds.", "The session timeout is 30 minutes.", DISTINCT),
    ("The support hotline is open until 6pm.", "The cafeteria is open until 3pm.", DISTINCT),
    ("The user's flight leaves at 07:40.", "The user's train leaves at 07:40.", DISTINCT),
    ("The logo is blue.", "The website background is white.", DISTINCT),
    ("The user's car is a Golf.", "The user's bike is a Brompton.", DISTINCT),
    ("The retro happens every Friday.", "The demo happens every other Thursday.", DISTINCT),
    ("The monthly budget for groceries is 400 euros.", "The monthly budget for travel is 400 euros.", DISTINCT),
    ("The user's phone is an iPhone 12.", "The user's tablet is an iPad Air.", DISTINCT),
    ("The main branch is called master.", "The release branch is called stable.", DISTINCT),
    ("The user goes swimming on Sundays.", "The user goes climbing on Sundays.", DISTINCT),
    ("The parking permit costs 30 euros.", "The museum pass costs 30 euros.", DISTINCT),
    ("The office is on the third floor.", "The server room is on the fifth floor.", DISTINCT),
    ("The user moved to Porto last year.", "The user's brother moved to Braga.", DISTINCT),
    ("The team switched to Linear.", "The design team switched to Figma.", DISTINCT),
    ("The user no longer eats meat.", "The user no longer drinks soda.", DISTINCT),
    ("The user no longer smokes.", "The user smokes a pipe at weddings.", DISTINCT),
    ("The frontend moved to Vite.", "The backend moved to Go.", DISTINCT),
    ("The user visited Rome in May.", "The user visited Vienna in June.", DISTINCT),
    ("The user speaks Portuguese now.", "The user speaks Spanish.", DISTINCT),
    ("The user plays the piano.", "The user plays the guitar now.", DISTINCT),
    ("Ticket OPS-311 is about the flaky login test.", "Ticket OPS-312 is about the flaky login test.", DISTINCT),
    ("Server web-03 runs Ubuntu 22.04.", "Server web-04 runs Ubuntu 24.04.", DISTINCT),
    ("The user met Anna at the conference.", "The user met Ben at the conference.", DISTINCT),
    ("The user owns a red umbrella.", "The user owns a black umbrella.", DISTINCT),
    ("The user's favourite fruit is mango.", "The user's favourite vegetable is spinach.", DISTINCT),
    ("Room 12 is booked for the workshop.", "Room 14 is booked for the workshop.", DISTINCT),
    ("The user reads science fiction.", "The user reads history now and then.", DISTINCT),
    ("The staging cluster is in eu-west-1.", "The production cluster is in eu-central-1.", DISTINCT),
    ("The user's daughter is 7.", "The user's son is 9.", DISTINCT),
    ("The team uses Postgres for orders.", "The team uses Redis for sessions.", DISTINCT),
    ("The user bought a new laptop in January.", "The user bought a new monitor in February.", DISTINCT),
    ("The invoice for March was paid.", "The invoice for April was paid.", DISTINCT),
    ("The user jogs in the park.", "The user jogs on the beach when on holiday.", DISTINCT),
    ("Step 3 of the runbook restarts the queue.", "Step 4 of the runbook restarts the cache.", DISTINCT),
    ("The user's landlord is Mr Silva.", "The user's plumber is Mr Costa.", DISTINCT),
    ("The Monday meeting is about hiring.", "The Tuesday meeting is about budgets.", DISTINCT),
    ("The user has two cats.", "The user has one dog.", DISTINCT),
    ("The user watched Dune on Friday.", "The user watched Arrival on Saturday.", DISTINCT),
    ("The CI badge is green.", "The coverage badge is yellow.", DISTINCT),
    ("The user's password manager is Bitwarden.", "The user's note app is Obsidian.", DISTINCT),
    ("The user currently reads Middlemarch.", "The user's partner currently reads Dune.", DISTINCT),
    ("The user no longer uses Windows at work.", "The user uses Linux at home.", DISTINCT),
]

MORE: list[Pair] = [*MORE_UPDATES, *MORE_DISTINCTS]
# fmt: on
