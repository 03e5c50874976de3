/*
 * test_roles.c - the one table of who may do what (src/policy/roles.c):
 * role names, the scopes each role holds (the table of
 * docs/api-contract.md, "Roles"), which roles see every team, and whose
 * tokens each may create and revoke - the rule that an auditor manages
 * its own tokens only, and is told so (403) rather than shown a 404.
 * The daemon's side (every route x every role) is governance.t's RBAC
 * matrix; the engine's use of the token rule is in test_engine_govern.c.
 */
#include <string.h>

#include "../../src/policy/roles.h"
#include "../tap.h"

static const struct {
    const char *name;
    enum sl_role role;
} names[] = {
    {"viewer", SL_ROLE_VIEWER},   {"member", SL_ROLE_MEMBER}, {"team-admin", SL_ROLE_TEAM_ADMIN},
    {"admin", SL_ROLE_ADMIN},     {"auditor", SL_ROLE_AUDITOR},
};

/* Columns: role, the scopes docs/api-contract.md gives it. */
static const struct {
    enum sl_role role;
    unsigned scopes;
} documented[] = {
    {SL_ROLE_ADMIN, SL_SC_SELF | SL_SC_READ | SL_SC_JOBS_READ | SL_SC_JOBS_WRITE | SL_SC_REPORTS |
                        SL_SC_MANAGE | SL_SC_TOKENS | SL_SC_ADMIN | SL_SC_AUDIT | SL_SC_LINEAGE |
                        SL_SC_MODELS},
    {SL_ROLE_TEAM_ADMIN, SL_SC_SELF | SL_SC_READ | SL_SC_JOBS_READ | SL_SC_JOBS_WRITE |
                             SL_SC_REPORTS | SL_SC_MANAGE | SL_SC_TOKENS | SL_SC_LINEAGE |
                             SL_SC_MODELS},
    {SL_ROLE_MEMBER, SL_SC_SELF | SL_SC_READ | SL_SC_JOBS_READ | SL_SC_JOBS_WRITE | SL_SC_REPORTS |
                         SL_SC_TOKENS | SL_SC_LINEAGE | SL_SC_MODELS},
    {SL_ROLE_VIEWER,
     SL_SC_SELF | SL_SC_READ | SL_SC_JOBS_READ | SL_SC_REPORTS | SL_SC_TOKENS | SL_SC_LINEAGE},
    {SL_ROLE_AUDITOR, SL_SC_SELF | SL_SC_READ | SL_SC_JOBS_READ | SL_SC_REPORTS | SL_SC_TOKENS |
                          SL_SC_AUDIT | SL_SC_LINEAGE},
    {SL_ROLE_JOB, SL_SC_SELF | SL_SC_LINEAGE | SL_SC_MODELS},
    {SL_ROLE_NONE, 0},
};

/* May role 'r' (user "me" of team "vision") manage the tokens of 'user' of
 * 'team' who holds 'user_role'? */
static bool may(enum sl_role r, const char *user, const char *team, enum sl_role user_role)
{
    return sl_role_may_manage_tokens(r, "me", "vision", user, team, user_role);
}

int main(void)
{
    bool all_named = true, matrix = true;

    /* names */
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        all_named &= sl_role_of(names[i].name, 0) == names[i].role &&
                     strcmp(sl_role_name(names[i].role), names[i].name) == 0 &&
                     sl_role_assignable(names[i].name);
    }
    ok(all_named, "each user role is found by its name, named back, and may be given to a user");
    is_int(sl_role_of("admin", 7), SL_ROLE_JOB, "a job's token is the job role whatever its user's");
    is_int(sl_role_of("root", 0), SL_ROLE_NONE, "an unknown name is no role");
    is_int(sl_role_of(NULL, 0), SL_ROLE_NONE, "and so is none");
    ok(!sl_role_assignable("job") && !sl_role_assignable("root"),
       "the job role and unknown names may not be given to a user");

    /* scopes: the documented table, scope by scope, deny by default */
    for (size_t i = 0; i < sizeof(documented) / sizeof(documented[0]); i++)
        for (unsigned bit = 1; bit <= SL_SC_MODELS; bit <<= 1) {
            bool want = (documented[i].scopes & bit) != 0;
            if (sl_role_may(documented[i].role, bit) != want) {
                diag("role %d scope %#x: got %d", (int)documented[i].role, bit, !want);
                matrix = false;
            }
        }
    ok(matrix, "every role holds exactly the scopes of its row in docs/api-contract.md");
    ok(sl_role_may(SL_ROLE_NONE, SL_SC_PUBLIC) && !sl_role_may(SL_ROLE_NONE, SL_SC_SELF),
       "no role reaches public routes only");
    ok(!sl_role_may(SL_ROLE_COUNT, SL_SC_SELF) && !sl_role_may((enum sl_role)-1, SL_SC_SELF),
       "a role out of the table holds nothing");
    ok(sl_role_all_teams(SL_ROLE_ADMIN) && sl_role_all_teams(SL_ROLE_AUDITOR) &&
           !sl_role_all_teams(SL_ROLE_TEAM_ADMIN) && !sl_role_all_teams(SL_ROLE_MEMBER) &&
           !sl_role_all_teams(SL_ROLE_VIEWER) && !sl_role_all_teams(SL_ROLE_JOB) &&
           !sl_role_all_teams(SL_ROLE_NONE),
       "admin and auditor see every team, no other role does");

    /* whose tokens: the reach of each role */
    is_int(sl_role_token_reach(SL_ROLE_ADMIN), SL_TOKENS_ALL, "an admin manages anyone's tokens");
    is_int(sl_role_token_reach(SL_ROLE_TEAM_ADMIN), SL_TOKENS_TEAM,
           "a team-admin its team's users'");
    ok(sl_role_token_reach(SL_ROLE_MEMBER) == SL_TOKENS_OWN &&
           sl_role_token_reach(SL_ROLE_VIEWER) == SL_TOKENS_OWN,
       "a member and a viewer their own");
    is_int(sl_role_token_reach(SL_ROLE_AUDITOR), SL_TOKENS_OWN,
           "an auditor its own only, although it sees every team");
    ok(sl_role_token_reach(SL_ROLE_JOB) == SL_TOKENS_NONE &&
           sl_role_token_reach(SL_ROLE_NONE) == SL_TOKENS_NONE,
       "a job's token and no role nobody's");

    /* whose tokens: the rule, user by user */
    ok(may(SL_ROLE_ADMIN, "ann", "nlp", SL_ROLE_AUDITOR) && may(SL_ROLE_ADMIN, "me", "vision",
                                                                SL_ROLE_ADMIN),
       "an admin manages another team's auditor's tokens, and its own");
    ok(may(SL_ROLE_TEAM_ADMIN, "vic", "vision", SL_ROLE_MEMBER) &&
           may(SL_ROLE_TEAM_ADMIN, "val", "vision", SL_ROLE_VIEWER) &&
           may(SL_ROLE_TEAM_ADMIN, "vee", "vision", SL_ROLE_TEAM_ADMIN),
       "a team-admin manages its team's members', viewers' and team-admins' tokens");
    ok(!may(SL_ROLE_TEAM_ADMIN, "boss", "vision", SL_ROLE_ADMIN) &&
           !may(SL_ROLE_TEAM_ADMIN, "aud", "vision", SL_ROLE_AUDITOR),
       "but not those of an admin or an auditor of its team");
    ok(!may(SL_ROLE_TEAM_ADMIN, "nia", "nlp", SL_ROLE_MEMBER),
       "nor those of another team's member");
    ok(may(SL_ROLE_TEAM_ADMIN, "me", "vision", SL_ROLE_TEAM_ADMIN),
       "and its own, as everyone may");
    ok(may(SL_ROLE_MEMBER, "me", "vision", SL_ROLE_MEMBER) &&
           !may(SL_ROLE_MEMBER, "vic", "vision", SL_ROLE_VIEWER),
       "a member manages its own tokens, not a teammate's");
    ok(may(SL_ROLE_VIEWER, "me", "vision", SL_ROLE_VIEWER) &&
           !may(SL_ROLE_VIEWER, "vic", "vision", SL_ROLE_MEMBER),
       "a viewer likewise");
    ok(may(SL_ROLE_AUDITOR, "me", "vision", SL_ROLE_AUDITOR),
       "an auditor manages its own tokens");
    ok(!may(SL_ROLE_AUDITOR, "vic", "vision", SL_ROLE_VIEWER) &&
           !may(SL_ROLE_AUDITOR, "nia", "nlp", SL_ROLE_MEMBER) &&
           !may(SL_ROLE_AUDITOR, "boss", "default", SL_ROLE_ADMIN),
       "an auditor may not revoke anyone else's tokens, in its team or another");
    ok(sl_role_all_teams(SL_ROLE_AUDITOR) && !sl_role_all_teams(SL_ROLE_MEMBER),
       "so an auditor is refused with 403 (it sees every team), a member with 404");
    ok(!may(SL_ROLE_JOB, "me", "vision", SL_ROLE_MEMBER),
       "a job's token may not manage even its own user's tokens");
    ok(!may(SL_ROLE_NONE, "me", "vision", SL_ROLE_MEMBER),
       "nor may a caller without a role");
    ok(!may(SL_ROLE_TEAM_ADMIN, "odd", "vision", SL_ROLE_NONE),
       "a user whose role is none the table knows is not a team-admin's to manage");
    return done_testing();
}
