"""Static tuning profiles (A-Tune's INI format): load, apply as a transaction, roll back, check."""

from hone.profiles.library import Profile, ProfileLibrary
from hone.profiles.transaction import active_profile, apply_profile, check_profile, rollback

__all__ = [
    "Profile",
    "ProfileLibrary",
    "active_profile",
    "apply_profile",
    "check_profile",
    "rollback",
]
