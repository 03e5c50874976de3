/*
 * roles.c - the roles and their scopes (roles.h): one row per role.
 */
#include "roles.h"

#include <string.h>

/* Columns: name, scopes held, sees every team, whose tokens its tokens
 * scope reaches, whether a team-admin may hold this role (and so manage
 * the tokens of its team's users who hold it). Deny by default: a role
 * holds only what its row lists. An auditor holds the tokens scope for its
 * own tokens only: it may not revoke anyone else's. */
static const struct {
    const char *name;
    unsigned scopes;
    bool all_teams;
    enum sl_token_reach tokens;
    bool team_held;
} roles[SL_ROLE_COUNT] = {
    [SL_ROLE_NONE] = {"", 0, false, SL_TOKENS_NONE, false},
    [SL_ROLE_VIEWER] = {"viewer",
                        SL_SC_SELF | SL_SC_READ | SL_SC_JOBS_READ | SL_SC_REPORTS |
                            SL_SC_TOKENS | SL_SC_LINEAGE,
                        false, SL_TOKENS_OWN, true},
    [SL_ROLE_MEMBER] = {"member",
                        SL_SC_SELF | SL_SC_READ | SL_SC_JOBS_READ | SL_SC_JOBS_WRITE |
                            SL_SC_REPORTS | SL_SC_TOKENS | SL_SC_LINEAGE | SL_SC_MODELS,
                        false, SL_TOKENS_OWN, true},
    [SL_ROLE_TEAM_ADMIN] = {"team-admin",
                            SL_SC_SELF | SL_SC_READ | SL_SC_JOBS_READ | SL_SC_JOBS_WRITE |
                                SL_SC_REPORTS | SL_SC_MANAGE | SL_SC_TOKENS | SL_SC_LINEAGE |
                                SL_SC_MODELS,
                            false, SL_TOKENS_TEAM, true},
    [SL_ROLE_ADMIN] = {"admin", ~0u, true, SL_TOKENS_ALL, false},
    [SL_ROLE_AUDITOR] = {"auditor",
                         SL_SC_SELF | SL_SC_READ | SL_SC_JOBS_READ | SL_SC_REPORTS |
                             SL_SC_TOKENS | SL_SC_AUDIT | SL_SC_LINEAGE,
                         true, SL_TOKENS_OWN, false},
    [SL_ROLE_JOB] = {"job", SL_SC_SELF | SL_SC_LINEAGE | SL_SC_MODELS, false, SL_TOKENS_NONE,
                     false},
};

enum sl_role sl_role_of(const char *name, int64_t job_id)
{
    if (job_id > 0)
        return SL_ROLE_JOB;
    for (int r = SL_ROLE_VIEWER; name && r < SL_ROLE_COUNT; r++)
        if (r != SL_ROLE_JOB && strcmp(name, roles[r].name) == 0)
            return (enum sl_role)r;
    return SL_ROLE_NONE;
}

const char *sl_role_name(enum sl_role r)
{
    return r >= 0 && r < SL_ROLE_COUNT ? roles[r].name : "";
}

bool sl_role_may(enum sl_role r, unsigned scope)
{
    if (scope == SL_SC_PUBLIC)
        return true;
    return r > SL_ROLE_NONE && r < SL_ROLE_COUNT && (roles[r].scopes & scope) == scope;
}

bool sl_role_all_teams(enum sl_role r)
{
    return r > SL_ROLE_NONE && r < SL_ROLE_COUNT && roles[r].all_teams;
}

bool sl_role_assignable(const char *name)
{
    enum sl_role r = sl_role_of(name, 0);

    return r != SL_ROLE_NONE && r != SL_ROLE_JOB;
}

enum sl_token_reach sl_role_token_reach(enum sl_role r)
{
    return r > SL_ROLE_NONE && r < SL_ROLE_COUNT ? roles[r].tokens : SL_TOKENS_NONE;
}

bool sl_role_may_manage_tokens(enum sl_role r, const char *who_user, const char *who_team,
                               const char *user, const char *team, enum sl_role user_role)
{
    switch (sl_role_token_reach(r)) {
    case SL_TOKENS_ALL:
        return true;
    case SL_TOKENS_TEAM:
        if (strcmp(team, who_team) == 0 && user_role > SL_ROLE_NONE &&
            user_role < SL_ROLE_COUNT && roles[user_role].team_held)
            return true;
        return strcmp(user, who_user) == 0;
    case SL_TOKENS_OWN:
        return strcmp(user, who_user) == 0;
    case SL_TOKENS_NONE:
        break;
    }
    return false;
}
