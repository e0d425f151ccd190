"""Export of generated records for drafter trainers."""
